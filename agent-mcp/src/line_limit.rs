//! The size limit on a stdio server's messages, kept before rmcp reads them.
//!
//! rmcp drops a line (one JSON-RPC message) longer than its limit, 16 MiB, and only logs it:
//! a call whose reply it dropped waited for its timeout, and the model read that the server
//! did not answer. [`LineLimit`] sits between the server's stdout and rmcp. It passes lines
//! within the limit through as they come, without holding them, and cuts a longer one at the
//! limit, ending it there (rmcp drops the cut line as malformed) and, when it answers a
//! request of ours, answering that request with a JSON-RPC error instead (`too_large.rs`): the
//! call fails as soon as the line's id is known, with a reason the model can act on, and the
//! session goes on. The id may come first or last in a line (the TypeScript SDK writes it
//! last), so a line's top-level keys are followed as it passes, once it is long enough to
//! matter ([`SCAN_FROM`]; a shorter one is only copied aside, in case it grows): the scan
//! skips the inside of strings, most of a large reply, with `memchr`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use crate::too_large::{MARK, message};

/// The longest line rmcp reads, its newline included.
pub(crate) const LIMIT: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How long a line grows before it is scanned: scanning each byte of every line cost a small
/// reply about 2,000 instructions (`mcp_tool_call` in benches/mcp.rs), copying it aside almost
/// nothing.
const SCAN_FROM: usize = 64 * 1024;

/// A server's stdout, with lines over `limit` bytes (newline included) cut and answered (see
/// the module doc).
pub(crate) struct LineLimit<R> {
    inner: R,
    limit: usize,
    server: String,
    /// Read from `inner`, handled up to `at` of `end`.
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    /// What goes out before more of `inner`: the end of a cut line and the error answering it;
    /// `sent` of it went out.
    pending: Vec<u8>,
    sent: usize,
    scan: Scan,
    /// The line was cut: the rest of it is read (for its id) and dropped.
    dropping: bool,
    /// The cut line's request was answered.
    answered: bool,
}

impl<R> LineLimit<R> {
    /// `inner` with lines of more than `limit` bytes cut; `server` names it in logs.
    pub(crate) fn new(inner: R, limit: usize, server: String) -> LineLimit<R> {
        LineLimit {
            inner,
            limit,
            server,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            at: 0,
            end: 0,
            pending: Vec::new(),
            sent: 0,
            scan: Scan {
                line: Line::default(),
                held: Vec::new(),
                scanning: false,
                from: SCAN_FROM,
            },
            dropping: false,
            answered: false,
        }
    }

    /// Handles what was read, passing what it may to `out`; whether it passed anything.
    fn handle(&mut self, out: &mut ReadBuf<'_>) -> bool {
        let read = &self.buf[self.at..self.end];
        if self.dropping {
            match memchr::memchr(b'\n', read) {
                Some(newline) => {
                    self.scan.follow(&read[..newline]);
                    self.at += newline + 1;
                    self.dropping = false;
                    if !self.answered {
                        self.answer();
                    }
                    self.answered = false;
                    self.scan.reset();
                }
                None => {
                    self.scan.follow(read);
                    self.at = self.end;
                }
            }
            return false;
        }
        let read = &read[..read.len().min(out.remaining())];
        let (content, newline) = match memchr::memchr(b'\n', read) {
            Some(newline) => (newline, true),
            None => (read.len(), false),
        };
        let room = self
            .limit
            .saturating_sub(1)
            .saturating_sub(self.scan.line.len);
        if content > room {
            // Over the limit: what fits goes out, then the line ends, cut.
            self.scan.follow(&read[..room]);
            self.scan.start();
            out.put_slice(&read[..room]);
            self.at += room;
            self.dropping = true;
            self.pending.push(b'\n');
            // A reply whose id came before the limit is answered at once.
            let line = &self.scan.line;
            if line.answer && line.id.is_some() {
                self.answer();
                self.answered = true;
            }
            return room > 0;
        }
        self.scan.follow(&read[..content]);
        self.scan.line.len += content;
        let passed = content + usize::from(newline);
        out.put_slice(&read[..passed]);
        self.at += passed;
        if newline {
            self.scan.reset();
        }
        passed > 0
    }

    /// Queues the error answering the cut line's request, if it is a reply to one of ours.
    fn answer(&mut self) {
        let line = &self.scan.line;
        let id = match &line.id {
            Some(id) if !line.request => &id.bytes[..id.len],
            _ => {
                tracing::warn!(
                    server = %self.server,
                    limit = self.limit,
                    "an MCP server's message over the size limit was dropped"
                );
                return;
            }
        };
        // The id as the server wrote it, checked, since it is written back as is.
        if serde_json::from_slice::<Value>(id).is_err() {
            return;
        }
        // `too_large::answer` as JSON, written without a copy of the id's value.
        let error = format!(
            r#","error":{{"code":-32603,"message":"{}","data":{{"agent_mcp":"{MARK}","limit":{}}}}}}}"#,
            message(self.limit),
            self.limit
        );
        self.pending.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        self.pending.extend_from_slice(id);
        self.pending.extend_from_slice(error.as_bytes());
        self.pending.push(b'\n');
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.sent < this.pending.len() {
                let n = out.remaining().min(this.pending.len() - this.sent);
                out.put_slice(&this.pending[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.pending.len() {
                    this.pending.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.at == this.end {
                let mut read = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let n = read.filled().len();
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                (this.at, this.end) = (0, n);
            }
            if this.handle(out) {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

/// The line going by, and its scan, which starts once the line grows past `from` bytes.
struct Scan {
    line: Line,
    /// The line's bytes while it is no longer than `from`: most lines end before that, and
    /// are never scanned.
    held: Vec<u8>,
    /// The line is scanned: `held` was fed to `line`.
    scanning: bool,
    from: usize,
}

impl Scan {
    /// Takes the line's next bytes: held while the line is short, else scanned.
    fn follow(&mut self, bytes: &[u8]) {
        if !self.scanning {
            if self.held.len() + bytes.len() <= self.from {
                self.held.extend_from_slice(bytes);
                return;
            }
            self.start();
        }
        self.line.feed(bytes);
    }

    /// Scans the line from here on, and what was held of it.
    fn start(&mut self) {
        if !self.scanning {
            self.scanning = true;
            self.line.feed(&self.held);
            self.held.clear();
        }
    }

    /// Starts the next line.
    fn reset(&mut self) {
        self.line = Line::default();
        self.held.clear();
        self.scanning = false;
    }
}

/// What is known of the line going by: its length, where its scan stands, and its top-level
/// `id` and kind.
#[derive(Default)]
struct Line {
    /// Its bytes so far, the newline left out.
    len: usize,
    /// How deep in objects and arrays the scan is (1: the message's own keys).
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, a key comes next (after `{` or `,`, before `:`).
    key_next: bool,
    /// The top-level key being read, up to 8 bytes (longer or escaped: none of interest).
    key: [u8; 8],
    key_len: usize,
    in_key: bool,
    /// The value going by at depth 1 is the id's.
    in_id: bool,
    /// The id as written; `None` until its value ended, or when it is longer than an [`Id`]
    /// holds or not a number or a string.
    id: Option<Id>,
    reading_id: Id,
    id_ok: bool,
    /// A `method` key: a request or notification of the server's, whose id is its own.
    request: bool,
    /// A `result` or `error` key: a reply.
    answer: bool,
}

/// A top-level id as written (a number, or a string with its quotes and escapes), up to 64
/// bytes.
#[derive(Clone, Copy)]
struct Id {
    bytes: [u8; 64],
    len: usize,
}

impl Default for Id {
    fn default() -> Id {
        Id {
            bytes: [0; 64],
            len: 0,
        }
    }
}

impl Line {
    /// Follows `bytes` (no newline among them) through the line's JSON.
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&byte, rest)) = bytes.split_first() {
            bytes = rest;
            if self.in_string {
                self.keep(byte);
                if self.escaped {
                    self.escaped = false;
                    // An escaped key is none this scan looks for.
                    self.key_len = self.key.len() + 1;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                    self.string_ended();
                } else if !self.in_key && !self.in_id {
                    // The inside of a string nothing is kept of, skipped at once.
                    let skip = memchr::memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len());
                    bytes = &bytes[skip..];
                }
                continue;
            }
            match byte {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.key_next {
                        self.in_key = true;
                        self.key_len = 0;
                    } else {
                        self.keep(byte);
                    }
                }
                b'{' | b'[' => {
                    if self.in_id {
                        // An id is a number or a string.
                        self.in_id = false;
                        self.id_ok = false;
                    }
                    self.depth = self.depth.saturating_add(1);
                    self.key_next = self.depth == 1 && byte == b'{';
                }
                b'}' | b']' => {
                    if self.depth == 1 {
                        self.value_ended();
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                b',' if self.depth == 1 => {
                    self.value_ended();
                    self.key_next = true;
                }
                b' ' | b'\t' | b'\r' | b':' => {}
                _ => self.keep(byte),
            }
        }
    }

    /// Keeps `byte` of the key or the id being read.
    fn keep(&mut self, byte: u8) {
        if self.in_key {
            if byte != b'"'
                && let Some(slot) = self.key.get_mut(self.key_len)
            {
                *slot = byte;
            }
            self.key_len = self.key_len.saturating_add(1);
        } else if self.in_id {
            let id = &mut self.reading_id;
            match id.bytes.get_mut(id.len) {
                Some(slot) => {
                    *slot = byte;
                    id.len += 1;
                }
                None => self.id_ok = false,
            }
        }
    }

    fn string_ended(&mut self) {
        if !self.in_key {
            return;
        }
        self.in_key = false;
        self.key_next = false;
        // The closing quote was counted.
        let key = self
            .key
            .get(..self.key_len.saturating_sub(1))
            .unwrap_or(&[]);
        match key {
            b"id" => {
                self.in_id = true;
                self.id_ok = true;
                self.reading_id.len = 0;
            }
            b"method" => self.request = true,
            b"result" | b"error" => self.answer = true,
            _ => {}
        }
    }

    fn value_ended(&mut self) {
        if self.in_id {
            self.in_id = false;
            if self.id_ok && self.reading_id.len > 0 {
                self.id = Some(self.reading_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A reader giving `bytes` `step` at a time.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self.step.min(self.bytes.len()).min(out.remaining());
            out.put_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Poll::Ready(Ok(()))
        }
    }

    /// What rmcp reads of `input` through a limit of `limit`, the same whether it comes
    /// whole or a few bytes at a time, is read into a large buffer or a small one, and is
    /// scanned from its first byte, from its 16th or only once cut.
    async fn through(input: &str, limit: usize) -> String {
        let mut outputs = Vec::new();
        for (step, read, scan_from) in [
            (usize::MAX, 8192, SCAN_FROM),
            (1, 1, 0),
            (7, 3, 16),
            (5, 64, SCAN_FROM),
            (usize::MAX, 8192, 0),
        ] {
            let trickle = Trickle {
                bytes: input.as_bytes(),
                step,
            };
            let mut limited = LineLimit::new(trickle, limit, "test".to_owned());
            limited.scan.from = scan_from;
            let mut out = Vec::new();
            let mut buf = vec![0; read];
            loop {
                let n = limited.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            outputs.push(String::from_utf8(out).unwrap());
        }
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{outputs:#?}");
        outputs.remove(0)
    }

    /// The error line answering request `id`.
    fn answer(id: &str, limit: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"the MCP server's reply was larger than the {limit} bytes limit on one message","data":{{"agent_mcp":"reply_too_large","limit":{limit}}}}}}}"#
        ) + "\n"
    }

    /// The error line written over stdio is `too_large::answer`, as an HTTP reply's is.
    #[test]
    fn the_error_line_is_the_one_every_transport_answers_with() {
        // `answer` is the line the tests above see `LineLimit` write.
        let line: Value = serde_json::from_str(&answer("7", 64)).unwrap();
        let error = serde_json::to_value(crate::too_large::answer(64)).unwrap();
        assert_eq!(line["error"], error);
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let line = r#"{"jsonrpc":"2.0","id":1,"result":{"text":"abc"}}"#;
        let input = format!("{line}\n{line}\r\n\n{line}");
        assert_eq!(through(&input, 64).await, input);
        // A line of exactly the limit, its newline included, passes; one byte more is cut.
        let exact = format!("{line}\n");
        assert_eq!(through(&exact, exact.len()).await, exact);
        let cut = through(&exact, exact.len() - 1).await;
        assert_eq!(
            cut,
            format!(
                "{}\n{}",
                &line[..line.len() - 1],
                answer("1", exact.len() - 1)
            )
        );
    }

    #[tokio::test]
    async fn a_reply_over_the_limit_is_cut_and_answered_with_an_error() {
        let big = "x".repeat(200);
        let next = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        // The id first, as rmcp and Python's SDK write it, and last, as TypeScript's does;
        // a string id with an escaped quote; `id` keys and text inside the result, not the
        // message's.
        for (reply, id) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}"#),
                "7",
            ),
            (
                format!(
                    r#"{{"result":{{"id":99,"content":[{{"text":"\"id\":5,{big}"}}]}},"jsonrpc":"2.0","id":"a\"b"}}"#
                ),
                r#""a\"b""#,
            ),
            (
                format!(r#"{{ "error" : {{"message":"{big}"}}, "id" : 12 }}"#),
                "12",
            ),
        ] {
            let input = format!("{reply}\n{next}\n");
            let out = through(&input, 64).await;
            let prefix = &reply[..63];
            assert_eq!(
                out,
                format!("{prefix}\n{}{next}\n", answer(id, 64)),
                "{reply}"
            );
        }
    }

    /// A message of the server's own (a request, whose id is its own, or a notification) over
    /// the limit is cut and dropped, as is one without an id a reply could be matched by.
    #[tokio::test]
    async fn a_message_over_the_limit_that_answers_nothing_is_dropped() {
        let big = "x".repeat(200);
        let next = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        for message in [
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"params":{{"a":"{big}"}},"method":"sampling/createMessage"}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"a":"{big}"}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","result":{{"a":"{big}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{{"a":1}},"result":{{"a":"{big}"}}}}"#),
            format!(r#"[{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}"}}}}]"#),
            big.clone(),
        ] {
            let input = format!("{message}\n{next}\n");
            assert_eq!(
                through(&input, 64).await,
                format!("{}\n{next}\n", &message[..63]),
                "{message}"
            );
        }
    }
}
