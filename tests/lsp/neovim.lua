-- Headless Neovim (0.7: no vim.lsp.start) attaches `ignite lsp` to the
-- broken file being edited and waits for its diagnostics, then opens
-- $IGNITE_MESSY, formats it through the server and writes both results to
-- $IGNITE_REPORT before quitting; `tests/lsp.rs` reads the report.
local report = os.getenv("IGNITE_REPORT")
local messy = os.getenv("IGNITE_MESSY")
local lines = {}
local function finish()
  local file = io.open(report, "w")
  file:write(table.concat(lines, "\n") .. "\n")
  file:close()
  vim.cmd("qall!")
end

local client
local function format_messy()
  vim.cmd("edit " .. vim.fn.fnameescape(messy))
  vim.lsp.buf_attach_client(0, client)
  vim.lsp.buf.formatting_sync(nil, 10000)
  local formatted = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  table.insert(lines, "formatted=" .. table.concat(formatted, "|"))
  finish()
end

local seen = false
client = vim.lsp.start_client({
  name = "ignite",
  cmd = { os.getenv("IGNITE_BIN"), "lsp" },
  root_dir = vim.fn.expand("%:p:h"),
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      if seen or #result.diagnostics == 0 then
        return
      end
      seen = true
      local first = result.diagnostics[1]
      table.insert(lines, "count=" .. #result.diagnostics)
      table.insert(lines, "code=" .. tostring(first.code))
      table.insert(lines, "line=" .. first.range.start.line)
      vim.schedule(format_messy)
    end,
  },
})
if not client then
  table.insert(lines, "error=the client did not start")
  finish()
end
vim.lsp.buf_attach_client(0, client)
vim.defer_fn(function()
  table.insert(lines, "error=timed out after 30 s")
  finish()
end, 30000)
