//! The system prompt of a session with context blocks: the agent's instructions, then each
//! block under its name.

use super::config::{SessionConfig, SessionInfo};
use crate::message::Message;

/// The system prompt built from `instructions` and the configuration's blocks, or the
/// instructions alone when there is no block. A block's provider error is returned with its name.
pub(crate) async fn compose(
    instructions: Option<&str>,
    config: &SessionConfig,
    info: &SessionInfo,
) -> Result<Option<String>, (String, String)> {
    if config.blocks.is_empty() {
        return Ok(instructions.map(str::to_owned));
    }
    let mut parts: Vec<String> = instructions
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    for block in &config.blocks {
        let text = block
            .provider
            .text(info)
            .await
            .map_err(|error| (block.name.clone(), error))?;
        let text = match block.max_tokens {
            Some(budget) => truncate(&text, budget, config),
            None => text,
        };
        if !text.is_empty() {
            parts.push(format!("## {}\n{}", block.name, text));
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
}

/// The longest prefix of `text` (cut at a character boundary) that counts at most `budget`
/// tokens by the session's counter.
pub(crate) fn truncate(text: &str, budget: usize, config: &SessionConfig) -> String {
    let tokens = |prefix: &str| config.count(&Message::system(prefix));
    if tokens(text) <= budget {
        return text.to_owned();
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(index, _)| index)
        .chain(std::iter::once(text.len()))
        .collect();
    // Binary search for the last boundary whose prefix fits (the empty prefix always does,
    // or nothing does and the block is dropped).
    let (mut low, mut high) = (0, bounds.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if tokens(&text[..bounds[mid]]) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    text[..bounds[low]].to_owned()
}
