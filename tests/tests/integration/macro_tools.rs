//! `#[tool]` end to end: generated schemas, optional and defaulted parameters, the context
//! parameter, sync and async bodies, fallible outputs and name overrides.

use agent_core::{
    AgentBuilder, ScriptedModel, ScriptedStep, Tool, ToolContext, ToolError, TurnResult,
    TurnStatus, tool,
};
use serde_json::json;

use divide_tool::Divide;
use hello_tool::Hello;
use search_tool::{Search, SearchArgs};

/// Search the notes.
#[tool(name = "search-notes")]
async fn search(
    /// What to look for.
    query: String,
    /// How many hits at most.
    #[arg(default = 2)]
    limit: u32,
    /// Only notes with this tag.
    tag: Option<String>,
    ctx: ToolContext,
) -> Result<Vec<String>, std::io::Error> {
    let tag = tag.unwrap_or_else(|| "any".to_owned());
    Ok((0..limit)
        .map(|i| {
            format!(
                "{query}#{i} tag={tag} call={} step={}",
                ctx.call_id, ctx.step
            )
        })
        .collect())
}

/// Divide two numbers.
#[tool]
fn divide(a: f64, b: f64) -> Result<f64, ToolError> {
    if b == 0.0 {
        return Err(ToolError::new("division by zero"));
    }
    Ok(a / b)
}

/// Say hello.
#[tool]
fn hello() -> String {
    "hello".to_owned()
}

/// Look a word up.
#[doc = concat!("Knows ", stringify!(12), " languages.")]
///     Indented lines are trimmed.
#[tool]
fn lookup(word: String) -> String {
    word
}

#[test]
fn a_doc_written_by_a_macro_is_the_description() {
    use lookup_tool::Lookup;
    assert_eq!(
        Lookup::DESCRIPTION,
        "Look a word up.\nKnows 12 languages.\nIndented lines are trimmed."
    );
    // Written with literals alone, it is the same text.
    assert_eq!(Hello::DESCRIPTION, "Say hello.");
}

/// Sum two numbers.
///
/// Both are integers:
///
/// - `a`, the first;
/// - `b`, the second.
#[tool]
fn sum(a: i64, b: i64) -> i64 {
    a + b
}

#[test]
fn a_docs_blank_lines_stay_in_the_description() {
    use sum_tool::Sum;
    assert_eq!(
        Sum::DESCRIPTION,
        "Sum two numbers.\n\nBoth are integers:\n\n- `a`, the first;\n- `b`, the second."
    );
}

#[test]
fn the_schema_is_json_schema_2020_12_with_descriptions_optional_fields_and_defaults() {
    let schema = Search::schema();
    // No `$schema` key (some servers reject it); a closed arguments object.
    assert_eq!(schema.get("$schema"), None);
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(
        schema["properties"]["query"]["description"],
        "What to look for."
    );
    assert_eq!(schema["properties"]["limit"]["default"], 2);
    assert_eq!(
        schema["properties"]["tag"]["description"],
        "Only notes with this tag."
    );
    assert!(
        schema["properties"].get("ctx").is_none(),
        "the context parameter is not in the schema"
    );
    assert_eq!(<Search as Tool>::NAME, "search-notes");
    assert_eq!(<Search as Tool>::DESCRIPTION, "Search the notes.");
    assert!(
        std::ptr::eq(Search::schema(), Search::schema()),
        "the schema is built once"
    );
    assert_eq!(Hello::schema()["properties"], json!({}));
}

/// The text and error flag of each result of a turn's first step.
fn first_results(result: &TurnResult) -> Vec<(&str, bool)> {
    result.steps[0]
        .tool_results
        .iter()
        .map(|r| (r.content.as_str(), r.is_error))
        .collect()
}

#[tokio::test]
async fn tools_run_with_defaults_context_and_errors_as_results() {
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "search-notes", r#"{"query":"rust"}"#)
            .tool_call("c2", "divide", r#"{"a":1,"b":0}"#)
            .tool_call("c3", "divide", r#"{"a":9,"b":3}"#)
            .tool_call("c4", "hello", "")
            .tool_call("c5", "divide", r#"{"a":"nine","b":3}"#),
        ScriptedStep::new().text("ok"),
    ]);
    let agent = AgentBuilder::new("tools")
        .model(model.clone())
        .tool(Search)
        .tool(Divide)
        .tool(Hello)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    assert_eq!(result.status, TurnStatus::Completed, "{result:?}");
    let received = first_results(&result);
    assert_eq!(
        received,
        [
            (
                r#"["rust#0 tag=any call=c1 step=0","rust#1 tag=any call=c1 step=0"]"#,
                false
            ),
            ("division by zero", true),
            ("3.0", false),
            ("hello", false),
            (
                "invalid arguments for tool `divide` at `a`: invalid type: string \"nine\", expected f64",
                true
            ),
        ]
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(offered, ["search-notes", "divide", "hello"]);
}

/// Which notes to list.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Filter {
    /// The tag to match.
    tag: String,
    /// How many at most.
    #[serde(default = "three")]
    limit: u32,
}

fn three() -> u32 {
    3
}

/// List notes.
#[tool]
fn list_notes(filter: Filter, pages: Vec<Filter>) -> String {
    let pages: Vec<u32> = pages.iter().map(|page| page.limit).collect();
    format!("{} {} {pages:?}", filter.tag, filter.limit)
}

#[tokio::test]
async fn a_null_for_a_nested_field_that_may_be_left_out_takes_its_default() {
    // OpenAI's strict mode makes every property required and the optional ones nullable, so
    // the model sends `null` for a nested `#[serde(default)]` field; `tag` must be given.
    let model = ScriptedModel::new([
        ScriptedStep::new()
            .tool_call(
                "c1",
                "list_notes",
                r#"{"filter":{"tag":"a","limit":null},"pages":[{"tag":"b","limit":null},{"tag":"c","limit":7}]}"#,
            )
            .tool_call("c2", "list_notes", r#"{"filter":{"tag":null,"limit":null},"pages":[]}"#),
        ScriptedStep::new().text("ok"),
    ]);
    let agent = AgentBuilder::new("notes")
        .model(model)
        .tool(list_notes_tool::ListNotes)
        .build()
        .unwrap();
    let result = agent.run("go").await;
    let received = first_results(&result);
    assert_eq!(
        received,
        [
            ("a 3 [3, 7]", false),
            (
                "invalid arguments for tool `list_notes` at `filter.tag`: invalid type: null, expected a string",
                true
            ),
        ]
    );
}

#[test]
fn an_unknown_argument_is_refused_not_ignored() {
    // The schema says `additionalProperties: false`; a misspelt optional parameter must not
    // quietly fall back to its default, so the model reads which names exist.
    let error = serde_json::from_str::<SearchArgs>(r#"{"query":"rust","limits":5}"#)
        .err()
        .map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("unknown field `limits`, expected one of `query`, `limit`, `tag` at line 1 column 24")
    );
    assert_eq!(
        agent_core::schema_for::<SearchArgs>()["additionalProperties"],
        json!(false)
    );
}

#[test]
fn a_defaulted_parameter_sent_as_null_takes_its_default() {
    // Strict modes (OpenAI `strict_tools`) make every parameter required and nullable, so a
    // model leaving `limit` out sends `null`.
    let args: SearchArgs =
        serde_json::from_str(r#"{"query":"rust","limit":null,"tag":null}"#).unwrap();
    assert_eq!(
        (args.query.as_str(), args.limit, args.tag),
        ("rust", 2, None)
    );
    let args: SearchArgs = serde_json::from_str(r#"{"query":"rust","limit":5}"#).unwrap();
    assert_eq!(args.limit, 5);
    let args: SearchArgs = serde_json::from_str(r#"{"query":"rust"}"#).unwrap();
    assert_eq!(args.limit, 2);
    assert_eq!(
        Search::schema()["properties"]["limit"]["default"],
        2,
        "the schema is unchanged"
    );
}

/// Match a keyword.
#[tool]
fn r#match(
    /// The keyword.
    r#type: String,
    /// How many times.
    #[arg(default = 1)]
    r#loop: u32,
) -> String {
    format!("{} x{}", r#type, r#loop)
}

#[test]
fn raw_identifier_parameters_keep_their_names_and_defaults() {
    use match_tool::{Match, MatchArgs};
    assert_eq!(Match::NAME, "match");
    let schema = Match::schema();
    assert_eq!(schema["required"], json!(["type"]));
    assert_eq!(schema["properties"]["loop"]["default"], 1);
    for (sent, expected) in [
        (r#"{"type":"fn"}"#, 1),
        (r#"{"type":"fn","loop":null}"#, 1),
        (r#"{"type":"fn","loop":4}"#, 4),
    ] {
        let args: MatchArgs = serde_json::from_str(sent).unwrap();
        assert_eq!((args.r#type.as_str(), args.r#loop), ("fn", expected));
    }
}

/// Fetch a page.
#[tool(retries = 1)]
fn fetch_page(url: String) -> Result<String, ToolError> {
    Err(ToolError::new(format!("{url} is unreachable")))
}

#[tokio::test]
async fn a_tools_own_retry_limit_ends_the_turn_past_it() {
    use fetch_page_tool::FetchPage;
    assert_eq!(FetchPage::RETRIES, Some(1));
    let model = ScriptedModel::new((0..3).map(|step| {
        ScriptedStep::new().tool_call(format!("c{step}"), "fetch_page", r#"{"url":"a.test"}"#)
    }));
    let agent = AgentBuilder::new("fetcher")
        .model(model.clone())
        .tool(FetchPage)
        .build()
        .unwrap();

    let result = agent.run("go").await;

    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(
        result.error.unwrap().message,
        "tool `fetch_page` failed 2 times in a row, past its limit of 1 retry; last error: \
         a.test is unreachable"
    );
    assert_eq!(result.steps.len(), 2);
    assert_eq!(model.remaining(), 1);
}
