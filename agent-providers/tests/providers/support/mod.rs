//! An in-process HTTP/1.1 server on loopback for provider tests: it answers each request with
//! the next scripted [`Reply`] (SSE bodies written chunk by chunk, split wherever the test says,
//! error statuses, stalls, disconnects) and records every request it received.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{Message, ModelError, ModelEvent, ModelRequest, ModelStream};
use agent_providers::HttpSettings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Settings for tests: short backoffs, generous timeouts, `max_retries` retries.
pub fn settings(max_retries: u32) -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        first_byte_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(20),
        ..HttpSettings::default()
    }
}

/// A request with one user message.
pub fn request() -> ModelRequest {
    {
        let mut req = ModelRequest::default();
        req.messages = vec![Message::user("hi")].into();
        req
    }
}

/// Every event of a model call, and the error that ended it, if any.
pub async fn collect(mut stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    use futures_core::Stream;
    let mut events = Vec::new();
    while let Some(item) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut stream).poll_next(cx)).await
    {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

/// How the server answers one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with `text/event-stream`, the body written as these pieces (one HTTP chunk each,
    /// flushed separately), then properly ended.
    Sse(Vec<Vec<u8>>),
    /// 200 with these pieces, then the connection is dropped before the body ends.
    SseThenDisconnect(Vec<Vec<u8>>),
    /// 200 with these pieces, then nothing more for this long (the connection stays open).
    SseThenStall(Vec<Vec<u8>>, Duration),
    /// No response at all for this long.
    Silence(Duration),
    /// 200 after `wait`, with these pieces `every` so long apart, then properly ended.
    Trickle {
        /// The time before the response's head.
        wait: Duration,
        /// The body's pieces.
        pieces: Vec<Vec<u8>>,
        /// The time before each piece.
        every: Duration,
    },
    /// An error status with headers and a body.
    Status {
        /// The status code.
        status: u16,
        /// Extra headers, such as `retry-after`.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// An error status whose body (its length announced) comes a byte at a time, `every` so
    /// long apart.
    StatusTrickle {
        /// The status code.
        status: u16,
        /// The body.
        body: String,
        /// The time before each byte.
        every: Duration,
    },
}

impl Reply {
    /// An SSE body written in pieces of `size` bytes (so events and even UTF-8 characters are
    /// split at arbitrary byte boundaries).
    pub fn sse_split(body: &str, size: usize) -> Reply {
        Reply::Sse(split(body.as_bytes(), size))
    }

    /// A JSON error status.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }
}

/// Splits bytes into pieces of `size` (the last may be shorter).
pub fn split(bytes: &[u8], size: usize) -> Vec<Vec<u8>> {
    bytes.chunks(size.max(1)).map(<[u8]>::to_vec).collect()
}

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The request line's method.
    pub method: String,
    /// The request line's path.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Recorded {
    /// The value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }
}

/// A running server; it stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server answering requests with `replies`, in order (a request past the last
    /// reply gets a 500).
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(replies.into_iter().collect::<VecDeque<_>>()));
        let (recorded, queued) = (requests.clone(), replies.clone());
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (recorded, replies) = (recorded.clone(), queued.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, recorded, replies).await;
                });
            }
        });
        TestServer {
            url,
            requests,
            replies,
            task,
        }
    }

    /// Queues one more reply, after those already queued.
    pub fn push(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    loop {
        let Some(request) = read_request(&mut socket).await? else {
            return Ok(());
        };
        recorded.lock().unwrap().push(request);
        let reply = replies.lock().unwrap().pop_front();
        let reply =
            reply.unwrap_or_else(|| Reply::status(500, r#"{"error":"no scripted reply left"}"#));
        match reply {
            Reply::Status {
                status,
                headers,
                body,
            } => {
                let mut head = format!(
                    "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                socket.write_all(head.as_bytes()).await?;
                socket.write_all(body.as_bytes()).await?;
                socket.flush().await?;
            }
            Reply::StatusTrickle {
                status,
                body,
                every,
            } => {
                let head = format!(
                    "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                socket.write_all(head.as_bytes()).await?;
                socket.flush().await?;
                for byte in body.as_bytes() {
                    tokio::time::sleep(every).await;
                    socket.write_all(std::slice::from_ref(byte)).await?;
                    socket.flush().await?;
                }
            }
            Reply::Silence(duration) => {
                tokio::time::sleep(duration).await;
                return Ok(());
            }
            Reply::Trickle {
                wait,
                pieces,
                every,
            } => {
                tokio::time::sleep(wait).await;
                write_sse(&mut socket, &[]).await?;
                for piece in &pieces {
                    tokio::time::sleep(every).await;
                    write_sse_piece(&mut socket, piece).await?;
                }
                socket.write_all(b"0\r\n\r\n").await?;
                socket.flush().await?;
            }
            Reply::Sse(pieces) => {
                write_sse(&mut socket, &pieces).await?;
                socket.write_all(b"0\r\n\r\n").await?;
                socket.flush().await?;
            }
            Reply::SseThenDisconnect(pieces) => {
                write_sse(&mut socket, &pieces).await?;
                // Half a chunk, then the connection goes away.
                socket.write_all(b"40\r\ndata: {\"cut").await?;
                socket.flush().await?;
                return Ok(());
            }
            Reply::SseThenStall(pieces, duration) => {
                write_sse(&mut socket, &pieces).await?;
                tokio::time::sleep(duration).await;
                return Ok(());
            }
        }
    }
}

async fn write_sse(socket: &mut TcpStream, pieces: &[Vec<u8>]) -> std::io::Result<()> {
    socket
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
        .await?;
    socket.flush().await?;
    for piece in pieces {
        write_sse_piece(socket, piece).await?;
    }
    Ok(())
}

/// Writes one piece of a response body as an HTTP chunk, flushed (an empty piece is skipped:
/// it would end the body).
async fn write_sse_piece(socket: &mut TcpStream, piece: &[u8]) -> std::io::Result<()> {
    if piece.is_empty() {
        return Ok(());
    }
    socket
        .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
        .await?;
    socket.write_all(piece).await?;
    socket.write_all(b"\r\n").await?;
    socket.flush().await?;
    // Let the client read this piece on its own.
    tokio::task::yield_now().await;
    Ok(())
}

/// Reads one request (head and a `content-length` body); `None` when the client closed.
async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    }))
}
