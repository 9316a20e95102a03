//! The error that answers a request whose reply was over the size limit on one message, on
//! any transport: a stdio server's (`line_limit.rs`) or a streamable-HTTP server's
//! (`http_limit.rs`). It is a JSON-RPC error marked as ours, so a call that receives it tells
//! the model the reply was too large and to ask for less, instead of what rmcp would have said.

use rmcp::model::ErrorData;

/// The `data.agent_mcp` of the error that answers a request whose reply was over the limit.
pub(crate) const MARK: &str = "reply_too_large";

/// The error's message, for a reply over `limit` bytes.
pub(crate) fn message(limit: usize) -> String {
    format!(
        "the MCP server's reply was larger than the {} limit on one message",
        size(limit)
    )
}

/// The error that answers a request whose reply was over `limit` bytes.
pub(crate) fn answer(limit: usize) -> ErrorData {
    let data = serde_json::json!({ "agent_mcp": MARK, "limit": limit });
    ErrorData::internal_error(message(limit), Some(data))
}

/// Whether `error` is the one a reply over the limit is answered with.
pub(crate) fn too_large(error: &ErrorData) -> bool {
    error
        .data
        .as_ref()
        .is_some_and(|data| data["agent_mcp"] == MARK)
}

/// `bytes` for a person: in MiB when a whole number of them.
pub(crate) fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_mib_when_whole() {
        assert_eq!(size(16 * 1024 * 1024), "16 MiB");
        assert_eq!(size(64), "64 bytes");
    }

    #[test]
    fn only_its_own_error_is_taken_for_a_reply_too_large() {
        assert!(too_large(&answer(1)));
        assert!(!too_large(&ErrorData::internal_error("x", None)));
        assert!(!too_large(&ErrorData::internal_error(
            "x",
            Some(serde_json::json!("reply_too_large"))
        )));
    }
}
