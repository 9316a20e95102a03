use agent_core::{AgentBuilder, AgentSpec, agent, tool};

/// Read a byte at an address.
#[tool]
unsafe fn peek(address: usize) -> u8 {
    let _ = address;
    0
}

struct Memory;

#[agent]
impl Memory {
    /// Write a byte at an address.
    #[tool]
    unsafe fn poke(&self, address: usize, value: u8) {
        let _ = (address, value);
    }
}

fn main() {
    let _ = AgentBuilder::new("memory").tool(peek_tool::Peek);
    let _ = Memory.builder();
}
