//! Typed output, offline: an agent extracts an invoice from a paragraph into a Rust type. Its
//! first answer adds up wrong, a `#[hook(validate_output)]` method sends it back with the
//! reason, and the model's corrected answer is the turn's typed value.
//!
//! Run: `cargo run -p examples --example extract`

use agent_core::{AgentSpec, OutputCheck, ScriptedModel, ScriptedStep, agent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const USAGE: &str = "usage: extract

Runs one offline turn in which an agent extracts a typed invoice from a paragraph. The first
answer's total does not match its lines, a validator sends it back, and the model fixes it.
Prints each retry as `retry N: REASON` and the final value as `output: JSON` on the last line.";

const PARAGRAPH: &str = "Invoice INV-2041 from Northwind Traders: 3 reams of paper at $4.50 \
each and 2 toner cartridges at $61.00 each, $135.50 in all.";

/// An invoice, as the agent must answer it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    /// The invoice number.
    number: String,
    /// Who sent it.
    vendor: String,
    /// What was bought.
    lines: Vec<Line>,
    /// The amount due, in cents.
    total_cents: u64,
}

/// One line of an invoice.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Line {
    /// What the line is for.
    description: String,
    /// How many.
    quantity: u32,
    /// The price of one, in cents.
    unit_cents: u64,
}

/// Extracts invoices from text.
#[agent(
    instructions = "Extract the invoice from the user's text.",
    output = Invoice,
    output_retries = 2
)]
impl Extractor {
    /// The lines must add up to the total.
    #[hook(validate_output)]
    fn lines_add_up(&self, invoice: &Invoice) -> OutputCheck {
        let sum: u64 = invoice
            .lines
            .iter()
            .map(|line| u64::from(line.quantity) * line.unit_cents)
            .sum();
        if sum == invoice.total_cents {
            OutputCheck::Accept
        } else {
            OutputCheck::retry(format!(
                "total_cents is {} but the lines add up to {sum}",
                invoice.total_cents
            ))
        }
    }
}

struct Extractor;

/// The model's two answers: the first misreads a unit price, the second reads it again.
fn model() -> ScriptedModel {
    let answer = |toner_cents: u64| {
        serde_json::json!({
            "number": "INV-2041",
            "vendor": "Northwind Traders",
            "lines": [
                {"description": "paper, ream", "quantity": 3, "unit_cents": 450},
                {"description": "toner cartridge", "quantity": 2, "unit_cents": toner_cents},
            ],
            "total_cents": 13550,
        })
        .to_string()
    };
    ScriptedModel::new([
        ScriptedStep::new().tool_call("call_1", "final_result", answer(6010)),
        ScriptedStep::new().tool_call("call_2", "final_result", answer(6100)),
    ])
}

#[tokio::main]
async fn main() {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!("{USAGE}");
            return;
        }
        eprintln!("extract: unknown argument `{arg}`\n\n{USAGE}");
        std::process::exit(2);
    }
    let agent = Extractor
        .builder()
        .model(model())
        .build()
        .expect("the extractor");
    println!("text: {PARAGRAPH}");
    let result = agent.run(PARAGRAPH).await;
    // Each answer sent back is the final-answer call's error result: the reason, then what to do.
    let reasons = result
        .steps
        .iter()
        .flat_map(|step| &step.tool_results)
        .filter(|record| record.name == "final_result" && record.is_error);
    for (n, record) in reasons.enumerate() {
        let reason = record.content.lines().next().unwrap_or_default();
        println!("retry {}: {reason}", n + 1);
    }
    match result.output::<Invoice>() {
        Ok(invoice) => println!(
            "output: {}",
            serde_json::to_string(invoice).expect("an invoice serializes")
        ),
        Err(error) => {
            eprintln!("extract: {error}");
            std::process::exit(1);
        }
    }
}
