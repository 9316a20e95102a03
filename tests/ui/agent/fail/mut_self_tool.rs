use agent_core::agent;

struct Counter {
    count: u64,
}

#[agent]
impl Counter {
    /// Count up.
    #[tool]
    fn bump(&mut self) -> u64 {
        self.count += 1;
        self.count
    }
}

fn main() {}
