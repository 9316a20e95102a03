//! Which tools a tool-call hook applies to.

use std::fmt;

use regex_lite::Regex;

/// Selects the tools a before/after_tool_call hook applies to.
///
/// Regexes use the `regex` crate's syntax (matched with `regex-lite`, so without Unicode
/// classes such as `\p{L}`; tool names are ASCII) and are searched unanchored, like JavaScript's
/// `RegExp.test`: `"..._file"` matches `read_file` and `write_file`; write `^...$` to anchor.
/// `#[hook]` resolves matchers against the agent's tools at compile time and registers the
/// resulting names, so static tools are never matched by regex at run time.
#[derive(Clone, Debug)]
pub struct Matcher {
    kind: MatcherKind,
    dynamic: bool,
}

#[derive(Clone, Debug)]
enum MatcherKind {
    All,
    Names(Vec<String>),
    Pattern(String),
}

/// A matcher that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatcherError(pub String);

impl fmt::Display for MatcherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MatcherError {}

impl Matcher {
    /// Every tool.
    pub fn all() -> Self {
        Matcher {
            kind: MatcherKind::All,
            dynamic: false,
        }
    }

    /// Exactly this tool.
    pub fn tool(name: impl Into<String>) -> Self {
        Matcher {
            kind: MatcherKind::Names(vec![name.into()]),
            dynamic: false,
        }
    }

    /// Any of these tools.
    pub fn tools<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Matcher {
            kind: MatcherKind::Names(names.into_iter().map(Into::into).collect()),
            dynamic: false,
        }
    }

    /// Tools whose name the regex matches (searched unanchored).
    pub fn regex(pattern: impl Into<String>) -> Self {
        Matcher {
            kind: MatcherKind::Pattern(pattern.into()),
            dynamic: false,
        }
    }

    /// Allows the matcher to match no tool when the agent is built (tools added later, at run
    /// time, are matched when they appear).
    pub fn dynamic(mut self) -> Self {
        self.dynamic = true;
        self
    }

    /// The tool names of a `tool`/`tools` matcher (`None` for a regex or every tool).
    pub fn names(&self) -> Option<&[String]> {
        match &self.kind {
            MatcherKind::Names(names) => Some(names),
            _ => None,
        }
    }

    /// Whether the matcher may match nothing at build time.
    pub fn is_dynamic(&self) -> bool {
        self.dynamic
    }

    /// Compiles the matcher.
    pub(crate) fn compile(&self) -> Result<CompiledMatcher, MatcherError> {
        Ok(match &self.kind {
            MatcherKind::All => CompiledMatcher::All,
            MatcherKind::Names(names) => CompiledMatcher::Names(names.clone()),
            MatcherKind::Pattern(pattern) => match Regex::new(pattern) {
                Ok(regex) => CompiledMatcher::Pattern(regex),
                Err(error) => {
                    return Err(MatcherError(format!("invalid regex `{pattern}`: {error}")));
                }
            },
        })
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            MatcherKind::All => f.write_str("every tool"),
            MatcherKind::Names(names) if names.len() == 1 => write!(f, "tool = \"{}\"", names[0]),
            MatcherKind::Names(names) => write!(f, "tools = {names:?}"),
            MatcherKind::Pattern(pattern) => write!(f, "match = \"{pattern}\""),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum CompiledMatcher {
    All,
    Names(Vec<String>),
    Pattern(Regex),
}

impl CompiledMatcher {
    pub(crate) fn matches(&self, tool: &str) -> bool {
        match self {
            CompiledMatcher::All => true,
            CompiledMatcher::Names(names) => names.iter().any(|n| n == tool),
            CompiledMatcher::Pattern(regex) => regex.is_match(tool),
        }
    }
}
