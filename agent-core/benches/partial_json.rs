//! Streaming a typed answer's partial values: a 100 KB JSON answer given in 1,000 chunks to
//! [`PartialJson`], a snapshot asked for after every chunk (what the stream API does for
//! `TurnEvent::PartialOutput`), against one `serde_json` parse of the whole answer.
//!
//! Run with `cargo bench -p agent-core --bench partial_json`; the README reports the ratio of
//! the two medians (the budget is 3x).

use std::hint::black_box;

use agent_core::PartialJson;
use serde_json::{Value, json};

fn main() {
    divan::main();
}

/// About 100 KB of JSON: an invoice with lines of strings, numbers, literals and escapes.
fn document() -> String {
    let lines: Vec<Value> = (0..800)
        .map(|i| {
            json!({
                "description": format!("item {i}: paper, \"A4\" ream\tbox"),
                "quantity": i % 7 + 1,
                "unit_cents": 450 + i,
                "discount": 0.125,
                "taxed": i % 2 == 0,
                "note": null,
            })
        })
        .collect();
    let text =
        json!({"number": "INV-2041", "vendor": "Northwind Traders", "lines": lines}).to_string();
    assert!((95_000..105_000).contains(&text.len()), "{}", text.len());
    text
}

/// The document cut into 1,000 pieces of about the same size, on character boundaries.
fn pieces(text: &str) -> Vec<&str> {
    let boundary = |i: usize| {
        let mut at = i * text.len() / 1_000;
        while !text.is_char_boundary(at) {
            at += 1;
        }
        at
    };
    (0..1_000)
        .map(|i| &text[boundary(i)..boundary(i + 1)])
        .collect()
}

#[divan::bench]
fn full_parse(bencher: divan::Bencher) {
    let text = document();
    bencher.bench(|| serde_json::from_str::<Value>(black_box(&text)).unwrap());
}

#[divan::bench]
fn partials_over_1000_chunks(bencher: divan::Bencher) {
    let text = document();
    let pieces = pieces(&text);
    assert_eq!(pieces.len(), 1_000);
    bencher.bench(|| {
        let mut json = PartialJson::new();
        for piece in &pieces {
            json.push(black_box(piece));
            black_box(json.snapshot());
        }
        assert!(json.is_complete());
        json
    });
}
