//! Server-sent events framing over a response body, without an allocation per event and without
//! copying the body: each read of the body is framed where it lies, and each event is handed to
//! the decoder as its name and data borrowed from that read. Only the bytes of an event cut by
//! the end of a read are copied (into one buffer reused for the whole stream) and completed from
//! the next read, and only an event whose data spans several `data:` lines is copied, joined,
//! into a second reused buffer. (A framer that returns owned events costs one `String` per event
//! for the data, and one more for an `event:` name; one that copies every read into its buffer
//! first costs a `memcpy` of each event's bytes: `benches/chunks.rs`.)
//!
//! Framing follows the WHATWG rules: lines end with `\n`, `\r` or `\r\n`; a blank line
//! dispatches the event; `:` starts a comment; a field's value drops one leading space;
//! several `data:` lines join with `\n`; `id` and `retry` count as fields but are not kept;
//! unknown fields are ignored; a leading byte-order mark is skipped. An event with no field is
//! not dispatched. Names and data must be UTF-8.
//!
//! At the end of the body, an event whose last line is complete is dispatched even without
//! its blank line: real servers (Anthropic's OpenAI-compatible endpoint among them) close the
//! connection right after `data: [DONE]\n`. An event cut inside a line is dropped, so the
//! stream stays truncated.

use std::ops::Range;

use bytes::Bytes;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The SSE framer of one response body (see the module).
#[derive(Default)]
pub(crate) struct SseFrames {
    /// The last read of the body, framed in place: its bytes from `at` are not framed yet.
    read: Bytes,
    at: usize,
    /// An event the end of a read cut, its bytes from `cut_at` not framed yet: completed a
    /// line at a time from the next read (empty when no event is cut).
    cut: Vec<u8>,
    cut_at: usize,
    /// Whether the cut event may be complete: a blank line (or other bytes) was added to it
    /// since it was last scanned. Without one it is not scanned again, so an event spanning
    /// many lines or reads is scanned once per blank line, not once per line (a scan per line
    /// made framing quadratic in the event's length).
    rescan: bool,
    /// The data of the last event with several `data:` lines, joined.
    joined: Vec<u8>,
    /// Whether the body's start was checked for a byte-order mark.
    bom_checked: bool,
    /// Whether the body ended.
    ended: bool,
    /// How many bytes the scans went over, for the tests of framing's cost.
    #[cfg(test)]
    scanned: usize,
}

/// One event, borrowed from the framer.
#[derive(Debug, PartialEq)]
pub(crate) struct SseEvent<'a> {
    /// The `event:` name, if any.
    pub(crate) name: Option<&'a str>,
    /// The data (empty when the event had no `data:` line).
    pub(crate) data: &'a str,
}

/// An event's name or data is not UTF-8.
#[derive(Debug, PartialEq)]
pub(crate) struct NotUtf8;

/// Which buffer an event was framed in.
#[derive(Clone, Copy)]
enum Source {
    Read,
    Cut,
}

/// Where an event's data is.
enum Data {
    None,
    /// One `data:` line: its value in the event's source.
    Line(Range<usize>),
    /// Several: joined in `joined`.
    Joined,
}

/// An event found: its name and data, in `Source`.
type Frame = (Source, Option<Range<usize>>, Data);

impl SseFrames {
    /// Adds a read of the body. The events of the last read are expected to be framed first
    /// (any left are kept, after the cut event).
    pub(crate) fn push(&mut self, bytes: Bytes) {
        if self.at < self.read.len() {
            self.cut.extend_from_slice(&self.read[self.at..]);
            self.rescan = true;
        }
        self.read = bytes;
        self.at = 0;
    }

    /// How many bytes of an event not complete yet the framer holds: after
    /// [`next_event`](Self::next_event) found none, the whole of the event the reads so far
    /// began.
    pub(crate) fn pending(&self) -> usize {
        self.cut.len() - self.cut_at
    }

    /// Marks the end of the body: a complete last line now ends its event.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// The next complete event, if the bytes so far hold one.
    pub(crate) fn next_event(&mut self) -> Option<Result<SseEvent<'_>, NotUtf8>> {
        let (source, name, data) = self.next_frame()?;
        let bytes = match source {
            Source::Read => &self.read[..],
            Source::Cut => &self.cut[..],
        };
        Some(event(bytes, &self.joined, name, data))
    }

    /// Finds the next event: in the read, or, when a read ended inside an event, in that
    /// event's bytes completed a line at a time from the next read.
    fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let cut = self.cut_at < self.cut.len();
            if !cut {
                self.cut.clear();
                self.cut_at = 0;
            }
            let (source, bytes, at, ended) = if cut {
                // The body's end ends the cut event only once the last read is all in it.
                let ended = self.ended && self.at == self.read.len();
                (Source::Cut, &self.cut[..], &mut self.cut_at, ended)
            } else {
                (Source::Read, &self.read[..], &mut self.at, self.ended)
            };
            let mut scanning = !cut || self.rescan || ended;
            if !self.bom_checked {
                let rest = &bytes[*at..];
                let waiting = rest.len() < BOM.len() && BOM.starts_with(rest) && !ended;
                if rest.starts_with(BOM) {
                    *at += BOM.len();
                }
                self.bom_checked = !waiting;
                scanning = true;
            }
            if self.bom_checked && scanning {
                #[cfg(test)]
                {
                    self.scanned += bytes.len() - *at;
                }
                let found = scan(bytes, at, ended, &mut self.joined);
                // After an event, the cut's bytes left may hold more.
                self.rescan = cut && found.is_some();
                if let Some((name, data, end)) = found {
                    *at = end;
                    return Some((source, name, data));
                }
            }
            if !cut {
                // The read ends inside an event (or at one's end): its bytes wait for the next.
                self.cut.extend_from_slice(&self.read[self.at..]);
                self.at = self.read.len();
                self.rescan = !self.bom_checked;
                return None;
            }
            // The cut event goes on with the next line of the read, if any.
            let rest = &self.read[self.at..];
            if rest.is_empty() {
                return None;
            }
            let line = memchr::memchr2(b'\n', b'\r', rest).map_or(rest.len(), |end| end + 1);
            // Lines end at each `\n` or `\r`, so a blank line comes as one of these alone,
            // right after another line's end (a `\n` after a `\r` ends the line before).
            self.rescan = match (self.cut[self.cut_at..].last(), &rest[..line]) {
                (Some(b'\r'), b"\n") => false,
                (None | Some(b'\n' | b'\r'), b"\n" | b"\r") => true,
                _ => false,
            };
            self.cut.extend_from_slice(&rest[..line]);
            self.at += line;
        }
    }
}

/// Scans one event from `bytes[*at..]` (skipping blank lines, comments and unknown fields
/// before it, which moves `at`): its name, its data and where it ends; `None` when the bytes so
/// far do not complete it.
fn scan(
    bytes: &[u8],
    at: &mut usize,
    ended: bool,
    joined: &mut Vec<u8>,
) -> Option<(Option<Range<usize>>, Data, usize)> {
    let (mut name, mut data) = (None, Data::None);
    let mut fields = false;
    let mut next = *at;
    loop {
        let rest = &bytes[next..];
        // A blank line, which ends an event, is seen without a search.
        let length = match rest.first() {
            Some(b'\n' | b'\r') => Some(0),
            _ => memchr::memchr2(b'\n', b'\r', rest),
        };
        let Some(length) = length else {
            // The bytes so far end inside the event: it waits for more, or, at the body's
            // end, is dispatched if its last line is complete (dropped if that is cut).
            return (ended && fields && rest.is_empty()).then_some((name, data, next));
        };
        let line = next..next + length;
        next += length + 1;
        // `\r\n` is one line end. A `\r` that ends the bytes so far may be followed by a `\n`
        // in the next ones: the event is read again from its start then, and a `\n` left after
        // a blank line's `\r` is one more blank line, which dispatches nothing.
        if rest[length] == b'\r' && rest.get(length + 1) == Some(&b'\n') {
            next += 1;
        }
        if line.is_empty() {
            if fields {
                return Some((name, data, next));
            }
            // Blank lines before any field separate nothing.
            *at = next;
            continue;
        }
        let text = &bytes[line.clone()];
        // The usual line, `data:`, is seen without a search for its colon (`benches/chunks.rs`:
        // about 45 instructions per chunk).
        let colon = if text.starts_with(b"data:") {
            Some(4)
        } else {
            memchr::memchr(b':', text)
        };
        let (field, value) = match colon {
            Some(0) => continue,
            Some(colon) => {
                // The value starts after the colon and one space, if any.
                let mut value = line.start + colon + 1;
                if text.get(colon + 1) == Some(&b' ') {
                    value += 1;
                }
                (&text[..colon], value..line.end)
            }
            None => (text, line.end..line.end),
        };
        match field {
            b"data" => {
                data = match data {
                    Data::None => Data::Line(value),
                    Data::Line(first) => {
                        joined.clear();
                        joined.extend_from_slice(&bytes[first]);
                        joined.push(b'\n');
                        joined.extend_from_slice(&bytes[value]);
                        Data::Joined
                    }
                    Data::Joined => {
                        joined.push(b'\n');
                        joined.extend_from_slice(&bytes[value]);
                        Data::Joined
                    }
                };
            }
            b"event" => name = Some(value),
            b"id" | b"retry" => {}
            _ => continue,
        }
        fields = true;
    }
}

fn event<'a>(
    bytes: &'a [u8],
    joined: &'a [u8],
    name: Option<Range<usize>>,
    data: Data,
) -> Result<SseEvent<'a>, NotUtf8> {
    let name = name.map(|name| text(&bytes[name])).transpose()?;
    let data = match data {
        Data::None => "",
        Data::Line(line) => text(&bytes[line])?,
        Data::Joined => text(joined)?,
    };
    Ok(SseEvent { name, data })
}

fn text(bytes: &[u8]) -> Result<&str, NotUtf8> {
    std::str::from_utf8(bytes).map_err(|_| NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Framed = Vec<Result<(Option<String>, String), NotUtf8>>;

    /// The events of a body sent in these pieces, until and at its end.
    fn frames(pieces: &[&[u8]]) -> Framed {
        fn drain(frames: &mut SseFrames, events: &mut Framed) {
            while let Some(event) = frames.next_event() {
                events.push(event.map(|e| (e.name.map(str::to_owned), e.data.to_owned())));
            }
        }
        let mut frames = SseFrames::default();
        let mut events = Vec::new();
        for piece in pieces {
            frames.push(Bytes::copy_from_slice(piece));
            drain(&mut frames, &mut events);
        }
        frames.end();
        drain(&mut frames, &mut events);
        events
    }

    fn event(name: Option<&str>, data: &str) -> Result<(Option<String>, String), NotUtf8> {
        Ok((name.map(str::to_owned), data.to_owned()))
    }

    /// An event of many `data:` lines, or of one long line, that spans many reads is scanned
    /// about once, not once per line or per read.
    #[test]
    fn an_event_spanning_many_reads_is_scanned_about_once() {
        let mut lines = b"data: [\n".to_vec();
        for _ in 0..5_000 {
            lines.extend_from_slice(b"data: 1,\n");
        }
        lines.extend_from_slice(b"data: 1]\n\n");
        let mut long = b"data: ".to_vec();
        long.extend(std::iter::repeat_n(b'x', 200_000));
        long.extend_from_slice(b"\r\n\r\n");
        for body in [lines, long] {
            for read in [7, 64, 4096] {
                let mut frames = SseFrames::default();
                let mut count = 0;
                for piece in body.chunks(read) {
                    frames.push(Bytes::copy_from_slice(piece));
                    while let Some(event) = frames.next_event() {
                        assert!(event.is_ok());
                        count += 1;
                    }
                }
                frames.end();
                assert!(frames.next_event().is_none());
                assert_eq!(count, 1);
                assert!(
                    frames.scanned <= 3 * body.len(),
                    "{} bytes scanned for an event of {} in reads of {read}",
                    frames.scanned,
                    body.len()
                );
            }
        }
    }

    const MIXED: &[u8] =
        b"\xEF\xBB\xBFdata: a\n\n: comment\n\ndata: b\r\n\r\nevent: e\ndata: c\rdata:d\r\r\
        foo: ignored\n\nid: 7\n\ndata\n\n\n\nevent: only\r\n\r\ndata:  two spaces\n\n";

    fn mixed() -> Framed {
        vec![
            event(None, "a"),
            event(None, "b"),
            event(Some("e"), "c\nd"),
            event(None, ""),
            event(None, ""),
            event(Some("only"), ""),
            event(None, " two spaces"),
        ]
    }

    #[test]
    fn lines_fields_and_events_follow_the_sse_rules() {
        assert_eq!(frames(&[MIXED]), mixed());
    }

    #[test]
    fn any_split_of_the_body_frames_the_same_events() {
        for i in 0..=MIXED.len() {
            for j in i..=MIXED.len() {
                let pieces = [&MIXED[..i], &MIXED[i..j], &MIXED[j..]];
                assert_eq!(frames(&pieces), mixed(), "split at {i} and {j}");
            }
        }
        let bytes: Vec<&[u8]> = MIXED.chunks(1).collect();
        assert_eq!(frames(&bytes), mixed());
    }

    #[test]
    fn the_body_end_completes_an_event_whose_last_line_is_complete() {
        assert_eq!(
            frames(&[b"data: {}\n\n", b"data: [DONE]\n"]),
            [event(None, "{}"), event(None, "[DONE]")]
        );
        assert_eq!(frames(&[b"data: [DONE]\r"]), [event(None, "[DONE]")]);
        assert_eq!(
            frames(&[b"event: message_stop\ndata: {}\r\n"]),
            [event(Some("message_stop"), "{}")]
        );
    }

    #[test]
    fn a_cut_last_line_drops_its_event() {
        assert_eq!(frames(&[b"data: [DO"]), []);
        assert_eq!(frames(&[b"data: a\n\ndata: [DONE]"]), [event(None, "a")]);
        assert_eq!(frames(&[b"data: a\nda"]), []);
        assert_eq!(frames(&[b""]), []);
        assert_eq!(frames(&[b"\xEF\xBB"]), []);
    }

    #[test]
    fn names_and_data_must_be_utf8() {
        assert_eq!(frames(&[b"data: \xFF\n\n"]), [Err(NotUtf8)]);
        assert_eq!(frames(&[b"event: \xC3\ndata: x\n\n"]), [Err(NotUtf8)]);
        assert_eq!(frames(&[b"data: \xC3", b"\xA9\n\n"]), [event(None, "é")]);
    }
}
