use agent_core::tool;

#[derive(Debug)]
pub struct ParseError;

/// Parse a number.
#[tool]
fn parse(text: String) -> Result<u32, ParseError> {
    text.parse().map_err(|_| ParseError)
}

fn main() {}
