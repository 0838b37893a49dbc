//! The MCP server's stdio transport: one JSON-RPC message per line on
//! standard input, answers on standard output, nothing else written there.
//!
//! rmcp's own line transport skips a line that is not JSON without an
//! answer and drops a line over its cap silently; this one answers both,
//! as JSON-RPC 2.0 says, and hands every other line to rmcp:
//!
//! | line | answer |
//! | --- | --- |
//! | a message rmcp reads | rmcp's (a result, or `-32601` for an unknown method) |
//! | not JSON | `-32700` (parse error), `id: null` |
//! | JSON, not a message (a batch, a request without `method`, `"jsonrpc": "1.0"`) | `-32600` (invalid request), the request's `id` when it has one |
//! | longer than the cap (`--max-body`) | `-32600`, `id: null`, as soon as the cap is passed; the rest of the line is read and dropped, never kept |
//! | a notification or a response rmcp does not read | none (JSON-RPC answers neither), a note on stderr for a response |
//!
//! Answers are written whole, one line each, under one lock, so they never
//! interleave with rmcp's.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

/// JSON-RPC's code for a message that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// A byte order mark, which JSON readers may skip (RFC 8259 §8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The output side, shared by every answer in flight.
type Output<W> = Arc<Mutex<Option<W>>>;

/// Lines in on `R`, lines out on `W`, each at most `cap` bytes in.
pub(crate) struct LineTransport<R, W> {
    input: BufReader<R>,
    /// The line read so far (kept when a read is cancelled mid-line).
    line: Vec<u8>,
    /// True while the rest of a line over the cap is dropped.
    skipping: bool,
    cap: usize,
    output: Output<W>,
    /// Error answers still being written: waited for before the input's
    /// end is reported, so none is lost when the session ends.
    answering: Vec<tokio::task::JoinHandle<()>>,
}

/// What one bounded read of a line found.
enum Read {
    /// A whole line is in `line`.
    Line,
    /// A line passed the cap (its rest is being dropped).
    TooLong,
    /// The input ended (a last line without a newline is dropped).
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads `input` and writes `output`, refusing lines over `cap` bytes.
    pub(crate) fn new(input: R, output: W, cap: usize) -> Self {
        Self {
            input: BufReader::new(input),
            line: Vec::new(),
            skipping: false,
            cap,
            output: Arc::new(Mutex::new(Some(output))),
            answering: Vec::new(),
        }
    }

    /// Reads up to the next newline into `self.line`, never keeping more
    /// than `self.cap` bytes. Cancellation-safe: what was read stays in
    /// `self.line` (or is counted as dropped) for the next call.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.input.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::End);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let taken = newline.map_or(available.len(), |at| at + 1);
            let ended = newline.is_some();
            let outcome = if self.skipping {
                self.skipping = !ended;
                None
            } else if self.line.len() + taken - usize::from(ended) > self.cap {
                // The cap counts the message, not its newline.
                self.line.clear();
                self.skipping = !ended;
                Some(Read::TooLong)
            } else {
                self.line.extend_from_slice(&available[..taken]);
                ended.then_some(Read::Line)
            };
            self.input.consume(taken);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }

    /// Writes `answer` as a line, on a task of its own: a `receive` that
    /// is cancelled never leaves half a line behind.
    fn answer(&mut self, answer: &Value) {
        let output = Arc::clone(&self.output);
        let mut line = answer.to_string().into_bytes();
        line.push(b'\n');
        self.answering.retain(|task| !task.is_finished());
        self.answering.push(tokio::spawn(async move {
            // A client that closed its input gets nothing: nothing to do.
            let _ = write_line(&output, &line).await;
        }));
    }

    /// Waits until every error answer is written. Cancellation-safe: a
    /// task is forgotten only once it has finished, so a `receive`
    /// cancelled while it waits leaves the rest for the next wait (taking
    /// the list first lost them, and `close` then shut the output before
    /// they were written).
    async fn answered(&mut self) {
        while let Some(task) = self.answering.last_mut() {
            // A task that failed wrote nothing more than it could.
            let _ = task.await;
            self.answering.pop();
        }
    }

    /// The message on a whole line, or what to answer instead.
    fn message(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = text.strip_prefix(BOM).unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let value: Value = match serde_json::from_slice(text) {
            Ok(value) => value,
            Err(e) => {
                self.answer(&error(Value::Null, PARSE_ERROR, &format!("parse error: {e}")));
                return None;
            }
        };
        let problem = match serde_json::from_value(value.clone()) {
            Ok(message) => return Some(message),
            Err(e) => e,
        };
        let method = value.get("method");
        let id = value.get("id").filter(|id| id.is_string() || id.is_number());
        if method.is_some() && value.get("id").is_none() {
            // A notification gets no answer, not even an error; unknown
            // ones are ignored (the MCP SDKs' rule).
            return None;
        }
        if method.is_none() && (value.get("result").is_some() || value.get("error").is_some()) {
            // Answering a response could start an endless exchange.
            note(&format!("a response to no request of this server was ignored: {problem}"));
            return None;
        }
        let message = if value.is_array() {
            "invalid request: batches are not supported; send one message per line".to_owned()
        } else {
            format!(
                "invalid request: {problem}; a request is {{\"jsonrpc\": \"2.0\", \"id\": ID, \"method\": NAME, \"params\": {{...}}}}"
            )
        };
        self.answer(&error(id.cloned().unwrap_or(Value::Null), INVALID_REQUEST, &message));
        None
    }
}

/// A note on stderr (stdout is JSON-RPC's).
fn note(message: &str) {
    use std::io::Write as _;
    // Nowhere to say that stderr failed.
    let _ = writeln!(std::io::stderr().lock(), "ignite mcp: {message}");
}

/// A JSON-RPC error response.
fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Writes `line` whole and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(output: &Output<W>, line: &[u8]) -> std::io::Result<()> {
    let mut output = output.lock().await;
    let Some(output) = output.as_mut() else {
        return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "the output is closed"));
    };
    output.write_all(line).await?;
    output.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: tokio::io::AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = Arc::clone(&self.output);
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            write_line(&output, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Read::Line) => {
                    let line = std::mem::take(&mut self.line);
                    let message = self.message(&line);
                    // Keep the buffer's room for the next line.
                    self.line = line;
                    self.line.clear();
                    if message.is_some() {
                        return message;
                    }
                }
                Ok(Read::TooLong) => {
                    let message = format!(
                        "invalid request: the message is longer than the limit of {} bytes; send less, or start the server with a larger `--max-body`",
                        self.cap
                    );
                    note(&message);
                    self.answer(&error(Value::Null, INVALID_REQUEST, &message));
                }
                Ok(Read::End) => {
                    self.answered().await;
                    return None;
                }
                Err(e) => {
                    note(&format!("standard input failed: {e}"));
                    self.answered().await;
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.answered().await;
        if let Some(mut output) = self.output.lock().await.take() {
            output.flush().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::Transport as _;
    use tokio::io::AsyncReadExt as _;

    use super::LineTransport;

    #[tokio::test]
    async fn answers_still_being_written_when_a_receive_is_cancelled_are_not_lost() {
        let (output, mut written) = tokio::io::duplex(1 << 16);
        let input: &[u8] = b"not json\nnor this\n";
        let mut transport = LineTransport::new(input, output, 1024);
        // `receive` reaches the input's end and waits for its two answers,
        // and is cancelled there before they are written (as rmcp does when
        // it has an answer of its own to send).
        tokio::select! {
            biased;
            _ = transport.receive() => panic!("the answers are still being written"),
            () = std::future::ready(()) => {}
        }
        assert!(transport.receive().await.is_none(), "the input has ended");
        transport.close().await.expect("closed");
        let mut text = String::new();
        written.read_to_string(&mut text).await.expect("the answers");
        assert_eq!(text.lines().filter(|l| l.contains("-32700")).count(), 2, "{text}");
    }
}
