use agent_core::{AgentSpec, ChunkContext, agent};

#[derive(Default)]
struct Shell;

/// Runs commands.
#[agent]
impl Shell {
    /// Run a command.
    #[cfg(any())]
    #[tool]
    fn run(&self, command: String) -> String {
        command
    }

    #[hook(on_chunk)]
    #[cfg(feature = "trace")]
    fn trace(&self, _ctx: &ChunkContext) {}
}

fn main() {
    let _ = Shell.builder();
}
