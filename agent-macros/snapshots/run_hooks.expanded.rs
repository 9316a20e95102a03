impl<T: Display + Send + Sync + 'static> ::agent_core::RunHooks for Timeline<T> {
    fn on_agent_start(&self, agent: &RunAgent) {
        println!("[{}] {}", self.tag, agent.path);
    }
    fn on_handoff(&self, from: &RunAgent, to: &str) {
        println!("[{}] {} -> {to}", self.tag, from.name);
    }
}
