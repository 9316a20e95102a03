use agent_core::{AgentSpec, agent};

struct Analyst;

/// Writes reports.
#[agent(output = String, stop_at_tools("report"))]
impl Analyst {
    /// Write the report.
    #[tool]
    fn report(&self, quarter: String) -> String {
        quarter
    }
}

fn main() {
    let _ = Analyst.builder();
}
