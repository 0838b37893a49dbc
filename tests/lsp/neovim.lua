-- Headless Neovim (0.7: no vim.lsp.start) attaches `ignite lsp` to the file
-- being edited, waits for its diagnostics, writes them to $IGNITE_REPORT
-- and quits; `tests/lsp.rs` reads the report.
local report = os.getenv("IGNITE_REPORT")
local function finish(lines)
  local file = io.open(report, "w")
  file:write(table.concat(lines, "\n") .. "\n")
  file:close()
  vim.cmd("qall!")
end

local client = vim.lsp.start_client({
  name = "ignite",
  cmd = { os.getenv("IGNITE_BIN"), "lsp" },
  root_dir = vim.fn.expand("%:p:h"),
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      if #result.diagnostics == 0 then
        return
      end
      local first = result.diagnostics[1]
      finish({
        "count=" .. #result.diagnostics,
        "code=" .. tostring(first.code),
        "line=" .. first.range.start.line,
        "message=" .. first.message:gsub("\n", " "),
      })
    end,
  },
})
if not client then
  finish({ "error=the client did not start" })
end
vim.lsp.buf_attach_client(0, client)
vim.defer_fn(function()
  finish({ "error=no diagnostics within 30 s" })
end, 30000)
