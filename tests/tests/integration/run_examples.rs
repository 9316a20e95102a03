//! Examples run as a user runs them (`cargo run -p examples --example NAME`), their output
//! checked line by line.

use std::path::Path;
use std::process::Command;

/// Runs an example with these arguments; its stdout, or a panic with its stderr.
fn run_example(name: &str, args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--quiet", "-p", "examples", "--example", name, "--"])
        .args(args)
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "example `{name}` failed:\n{stderr}"
    );
    String::from_utf8(output.stdout).expect("the example prints UTF-8")
}

#[test]
fn extract_prints_the_retry_and_the_fixed_invoice_last() {
    let stdout = run_example("extract", &[]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("text: Invoice INV-2041"), "{stdout}");
    assert_eq!(
        lines[1..],
        [
            "retry 1: total_cents is 13550 but the lines add up to 13370",
            r#"output: {"number":"INV-2041","vendor":"Northwind Traders","lines":[{"description":"paper, ream","quantity":3,"unit_cents":450},{"description":"toner cartridge","quantity":2,"unit_cents":6100}],"total_cents":13550}"#,
        ],
        "{stdout}"
    );
    // The last line is the typed value as JSON, and it adds up.
    let json: serde_json::Value =
        serde_json::from_str(lines.last().unwrap().strip_prefix("output: ").unwrap()).unwrap();
    let sum: u64 = json["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["quantity"].as_u64().unwrap() * line["unit_cents"].as_u64().unwrap())
        .sum();
    assert_eq!(json["total_cents"].as_u64(), Some(sum));
}

#[test]
fn extract_answers_help() {
    let stdout = run_example("extract", &["--help"]);
    assert!(stdout.starts_with("usage: extract\n"), "{stdout}");
    assert!(stdout.contains("`retry N: REASON`"), "{stdout}");
}
