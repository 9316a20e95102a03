use std::fmt::Display;
use std::sync::Mutex;

use agent_core::{ModelRequest, RunAgent, RunHooks, ToolCall, ToolResultRecord, TurnRequest, run_hooks};

/// Every run hook, each parameter written as the trait writes it or by another path.
#[derive(Default)]
struct Timeline {
    lines: Mutex<Vec<String>>,
}

#[run_hooks]
impl Timeline {
    fn on_agent_start(&self, agent: &RunAgent) {
        self.lines.lock().unwrap().push(format!("start {}", agent.path));
    }

    fn on_agent_end(&self, agent: &RunAgent, output: &str) {
        self.lines.lock().unwrap().push(format!("end {} {output}", agent.path));
    }

    fn on_handoff(&self, from: &agent_core::RunAgent, to: &str) {
        self.lines.lock().unwrap().push(format!("{} -> {to}", from.name));
    }

    fn on_tool_start(&self, _: &RunAgent, call: &ToolCall) {
        self.lines.lock().unwrap().push(call.name.to_string());
    }

    fn on_tool_end(self: &Self, _agent: &RunAgent, result: &ToolResultRecord) {
        self.lines.lock().unwrap().push(result.content.to_string());
    }

    fn on_llm_start(&self, _agent: &RunAgent, request: &ModelRequest) {
        self.lines.lock().unwrap().push(request.model.clone());
    }

    fn on_llm_end(&self, _agent: &RunAgent, text: &str, tool_calls: core::primitive::usize) {
        self.lines.lock().unwrap().push(format!("{text} {tool_calls}"));
    }
}

/// A generic observer, with only the run hooks it needs.
struct Tagged<T> {
    tag: T,
}

#[run_hooks(crate = ::agent_core)]
impl<T: Display + Send + Sync + 'static> Tagged<T> {
    fn on_handoff(&self, from: &RunAgent, to: &str) {
        println!("[{}] {} -> {to}", self.tag, from.name);
    }
}

fn observes(_: &impl RunHooks) {}

fn main() {
    let timeline = Timeline::default();
    observes(&timeline);
    observes(&Tagged { tag: 7 });
    let _ = TurnRequest::new("hello")
        .run_hooks(timeline)
        .run_hooks(Tagged { tag: "desk" });
}
