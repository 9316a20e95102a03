//! Several agents in one turn, offline: a triage agent hands the customer to a billing or a
//! tech desk; a before_handoff hook vetoes the tech desk out of hours (the model reads why and
//! picks billing); billing asks a ledger agent used as a tool (a subagent); the run has a token
//! budget and a model-call limit; run hooks print the whole run as a tree indented by agent path.
//!
//! Run: `cargo run -p examples --example triage`

use std::sync::Arc;

use agent_core::ToolCall;
use agent_core::{
    AgentBuilder, Budget, FnTool, Handoff, HandoffDecision, HandoffHistory, Hook, ModelRequest,
    RunAgent, RunHooks, ScriptedModel, ScriptedStep, Subagent, ToolError, ToolResultRecord,
    TurnRequest, event,
};
use serde_json::{Value, json};

const USAGE: &str = "usage: triage

Runs one offline turn in which a triage agent hands a customer to a billing desk (a veto turns
the tech desk down first), billing asks a ledger agent used as a tool, and run hooks print the
run as a tree indented by agent path.";

/// Prints every run event, indented by how deep its agent sits in the run.
struct Timeline;

fn indent(agent: &RunAgent) -> String {
    "  ".repeat(agent.path.matches(" > ").count())
}

fn clipped(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.len() > 60 {
        format!("{}…", &line[..line.floor_char_boundary(60)])
    } else {
        line.to_owned()
    }
}

impl RunHooks for Timeline {
    fn on_agent_start(&self, agent: &RunAgent) {
        println!("{}┌ {}", indent(agent), agent.path);
    }

    fn on_agent_end(&self, agent: &RunAgent, output: &str) {
        println!(
            "{}└ {} ends: {:?}",
            indent(agent),
            agent.name,
            clipped(output)
        );
    }

    fn on_handoff(&self, from: &RunAgent, to: &str) {
        println!("{}  handoff {} -> {to}", indent(from), from.name);
    }

    fn on_tool_start(&self, agent: &RunAgent, call: &ToolCall) {
        println!("{}│ tool {}({})", indent(agent), call.name, call.arguments);
    }

    fn on_tool_end(&self, agent: &RunAgent, result: &ToolResultRecord) {
        println!(
            "{}│ tool {} -> {} {:?}",
            indent(agent),
            result.name,
            result.outcome,
            clipped(&result.content)
        );
    }

    fn on_llm_start(&self, agent: &RunAgent, request: &ModelRequest) {
        let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        println!(
            "{}│ model call: {} messages, tools [{}]",
            indent(agent),
            request.messages.len(),
            tools.join(", ")
        );
    }

    fn on_llm_end(&self, agent: &RunAgent, text: &str, tool_calls: usize) {
        println!(
            "{}│ model answered {:?} and {tool_calls} tool call(s)",
            indent(agent),
            clipped(text)
        );
    }
}

/// The ledger: a subagent that looks up charges.
fn ledger() -> agent_core::Agent {
    let charges = FnTool::new(
        "charges",
        "The customer's recent charges.",
        json!({"type": "object"}),
        |_, _| async { Ok::<Value, ToolError>(json!(["2026-11-20 $12.00", "2026-11-20 $12.00"])) },
    );
    AgentBuilder::new("ledger")
        .description("Looks up a customer's charges.")
        .instructions("You read the ledger and answer with facts only.")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .tool_call("c1", "charges", "{}")
                .usage(120, 10),
            ScriptedStep::new()
                .text("Two charges of $12.00 on 2026-11-20: one is a duplicate.")
                .usage(160, 20),
        ]))
        .dyn_tool(charges)
        .build()
        .expect("the ledger agent")
}

fn main_agents() -> agent_core::Agent {
    let ledger = ledger();
    let billing = AgentBuilder::new("billing")
        .description("Invoices, charges and refunds.")
        .instructions("You are the billing desk.")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .tool_call(
                    "l1",
                    "ledger",
                    r#"{"input":"Recent charges of this customer?"}"#,
                )
                .usage(150, 15),
            ScriptedStep::new()
                .text("I found the duplicate $12.00 charge and refunded it.")
                .usage(210, 20),
        ]))
        .subagent(Subagent::of(&ledger))
        .build()
        .expect("the billing agent");
    let tech = AgentBuilder::new("tech")
        .description("Bugs and outages.")
        .model(ScriptedModel::new([]))
        .build()
        .expect("the tech agent");
    AgentBuilder::new("triage")
        .instructions("Route the customer to the right desk.")
        .model(ScriptedModel::new([
            ScriptedStep::new()
                .text("Looks like a technical glitch.")
                .tool_call("h1", "transfer_to_tech", "{}")
                .usage(100, 12),
            ScriptedStep::new()
                .text("Billing it is.")
                .tool_call("h2", "transfer_to_billing", "{}")
                .usage(140, 10),
        ]))
        .handoff(Handoff::to(&billing).history(HandoffHistory::Input))
        .handoff(&tech)
        .hook(Hook::<event::BeforeHandoff>::sync("office hours", |ctx| {
            if &*ctx.to == "tech" {
                println!("  (before_handoff: the tech desk is closed, denied)");
                HandoffDecision::deny("the tech desk is closed until 9:00; billing handles charges")
            } else {
                HandoffDecision::Allow
            }
        }))
        .build()
        .expect("the triage agent")
}

#[tokio::main]
async fn main() {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return;
        }
        eprintln!("triage: unknown argument `{arg}`\n\n{USAGE}");
        std::process::exit(2);
    }
    let triage = main_agents();
    let input = "I was charged twice for my subscription.";
    println!("customer: {input}\n");
    let timeline: Arc<dyn RunHooks> = Arc::new(Timeline);
    // A budget for the whole run, the ledger's calls included: on_stop would fire past it.
    let request = TurnRequest::new(input)
        .run_hooks_arc(timeline)
        .max_turns(12)
        .budget(Budget::tokens(2_000));
    let result = triage.run(request).await;
    println!(
        "\nstatus: {}, answered by {}, {} steps, {} tokens in this turn (budget 2000 for the run)\n{}",
        result.status,
        result.agent.name,
        result.steps.len(),
        result.usage.total_tokens(),
        result.text
    );
}
