use agent_core::agent;

#[derive(Debug)]
pub struct ParseError;

struct Numbers;

#[agent]
impl Numbers {
    /// Parse a number.
    #[tool]
    fn parse(&self, text: String) -> Result<u32, ParseError> {
        text.parse().map_err(|_| ParseError)
    }
}

fn main() {}
