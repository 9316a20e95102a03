use agent_core::{AgentSpec, agent};

struct Echo<T>(T);

#[agent]
impl<T: Send + Sync + 'static> Echo<T> {
    /// Echo the text.
    #[tool]
    fn echo(&self, text: String) -> String {
        text
    }
}

fn main() {
    // The type still implements `AgentSpec`: the error above is the only one.
    let _ = Echo(1u8).builder();
}
