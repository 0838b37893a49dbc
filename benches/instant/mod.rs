//! A server in a process of its own that answers every HTTP/1.1 request at
//! once with `{"ok":true}`, for the benches that time many calls at once.
//!
//! It is the bench's own binary started again with [`SERVE`] set (the bench
//! calls [`serve_if_asked`] first thing in `main`): one thread, one tokio
//! loop on 127.0.0.1, connections kept alive until the client closes them.
//! Out of the bench's process, its work is not timed as the bench's own, and
//! it takes one thread, not a runtime's worth, from the cores the measured
//! commands share; its backlog holds a whole burst's handshakes. Requests are read up to their blank line (GET, no body).
//! It stops when its standard input closes, so it dies with the bench.

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, Command, Stdio};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The variable that makes the bench binary a server.
const SERVE: &str = "IGNITE_BENCH_SERVE";

/// One answer, sent for every request.
const ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";

/// The running server process; killed when dropped.
pub(crate) struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub(crate) uri: String,
}

impl Server {
    /// Starts the bench's binary as a server and waits for its address.
    pub(crate) fn start() -> Self {
        let exe = std::env::current_exe().expect("the bench's binary");
        let mut child = Command::new(exe)
            .env(SERVE, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("the server's address");
        let uri = format!("http://{}", line.trim());
        Self { child, uri }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Serves, never returning, when the process was started by [`Server::start`].
pub(crate) fn serve_if_asked() {
    if std::env::var_os(SERVE).is_none() {
        return;
    }
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("tokio");
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket.bind(([127, 0, 0, 1], 0).into()).expect("binds");
        // Room for every connection of a burst: at the default backlog (128)
        // the kernel drops the handshakes of the rest, and their clients try
        // again a second later.
        let listener = socket.listen(4096).expect("listens");
        println!("{}", listener.local_addr().expect("an address"));
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            tokio::spawn(answer(stream));
        }
    });
}

/// Answers each request of one connection until the client closes it.
async fn answer(mut stream: tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::with_capacity(1024);
    let mut chunk = [0; 4096];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            pending.drain(..end + 4);
            if stream.write_all(ANSWER).await.is_err() {
                return;
            }
        }
    }
}
