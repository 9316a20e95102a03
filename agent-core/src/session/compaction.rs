//! Compaction: the oldest part of a history replaced by one summary message, persisted as a
//! summary row while the replaced rows turn silent. A cut never separates a tool call from its
//! result.

use super::config::SessionConfig;
use crate::message::Message;
use crate::store::{MessageStatus, NewMessage, SessionStore, StoreError};
use crate::util::{catch_panic, catch_unwind};

/// The text the summary message starts with.
pub const SUMMARY_HEADING: &str = "Summary of the earlier conversation:";

/// Whether cutting `messages` before index `cut` keeps every tool call with its result: a
/// step's results follow its assistant message, so the cut must not fall before a result.
pub fn is_boundary(messages: &[Message], cut: usize) -> bool {
    !matches!(messages.get(cut), Some(Message::Tool { .. }))
}

/// Where to cut `messages` so that about `keep_recent` of the newest are kept: the nearest
/// boundary at or before that point (keeping more), else the nearest after it. `None` when no
/// boundary replaces at least one message and keeps at least one.
pub fn cut_point(messages: &[Message], keep_recent: usize) -> Option<usize> {
    let len = messages.len();
    if len < 2 {
        return None;
    }
    let target = len.saturating_sub(keep_recent.max(1)).max(1);
    (1..=target)
        .rev()
        .chain(target + 1..len)
        .find(|&cut| is_boundary(messages, cut))
}

/// The message a summary is stored and sent as.
pub fn summary_message(summary: &str) -> Message {
    Message::system(format!("{SUMMARY_HEADING}\n{summary}"))
}

/// What a compaction did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Compaction {
    /// The history will start with `summary`, followed by `kept`, once `inserts` are stored
    /// and the rows `hide` are marked silent (in that order: a crash in between leaves
    /// duplicates, never a loss).
    Done {
        /// The messages the summary replaced.
        replaced: Vec<Message>,
        /// The summary message.
        summary: Message,
        /// The messages kept after it.
        kept: Vec<Message>,
        /// The rows to insert: the summary, then copies of the kept rows (rows are read in id
        /// order, so the kept ones are stored again after the summary).
        inserts: Vec<NewMessage>,
        /// The rows the compacted history no longer shows.
        hide: Vec<i64>,
    },
    /// The history stays as it was, for this reason.
    Skipped(String),
}

/// Plans a compaction of the stored history of `session`: summarizes the oldest visible
/// messages and says which rows to write. The caller writes them (through the message hooks).
pub(crate) async fn compact(
    store: &dyn SessionStore,
    session: &str,
    config: &SessionConfig,
) -> Result<Compaction, StoreError> {
    let Some(summarizer) = config.summarizer.clone() else {
        return Ok(Compaction::Skipped(
            "no summarizer is configured".to_owned(),
        ));
    };
    let rows: Vec<_> = store
        .load(session)
        .await?
        .into_iter()
        .filter(|row| row.status == MessageStatus::Completed && !row.silent)
        .collect();
    let messages: Vec<Message> = rows.iter().map(|row| row.message.clone()).collect();
    let Some(cut) = cut_point(&messages, config.keep_recent) else {
        return Ok(Compaction::Skipped(
            "the history has nothing to compact".to_owned(),
        ));
    };
    let (replaced, kept) = messages.split_at(cut);
    // A panicking summarizer is a failing one: the compaction is skipped.
    let summarized = match catch_panic(|| summarizer(replaced.to_vec())) {
        Ok(future) => catch_unwind(future).await,
        Err(message) => Err(message),
    };
    let summary = match summarized.unwrap_or_else(|message| Err(format!("it panicked: {message}")))
    {
        Ok(summary) => summary_message(&summary),
        Err(error) => {
            return Ok(Compaction::Skipped(format!(
                "the summarizer failed: {error}"
            )));
        }
    };
    let before: usize = replaced.iter().map(|m| config.count(m)).sum();
    if config.count(&summary) >= before {
        return Ok(Compaction::Skipped(
            "the summary is not shorter than what it replaces".to_owned(),
        ));
    }
    let copies = rows[cut..].iter().map(|row| NewMessage {
        request_sent_at: row.request_sent_at,
        ..NewMessage::completed(row.message.clone())
    });
    let inserts = std::iter::once(NewMessage::completed(summary.clone()))
        .chain(copies)
        .collect();
    Ok(Compaction::Done {
        replaced: replaced.to_vec(),
        summary,
        kept: kept.to_vec(),
        inserts,
        hide: rows.iter().map(|row| row.id).collect(),
    })
}

/// `messages` after a compaction: the summary in place of the replaced prefix, or (when the
/// messages do not start with it) the compacted history itself.
pub(crate) fn splice(
    messages: Vec<Message>,
    replaced: &[Message],
    summary: Message,
    kept: Vec<Message>,
) -> Vec<Message> {
    if messages.starts_with(replaced) {
        std::iter::once(summary)
            .chain(messages.into_iter().skip(replaced.len()))
            .collect()
    } else {
        std::iter::once(summary).chain(kept).collect()
    }
}
