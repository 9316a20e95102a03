//! Helpers every attribute shares: the crate path, doc comments, names.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Meta, Path};

use crate::ctxt::Ctxt;

/// The path generated code uses for agent-core: `::agent_core`, or the `crate = path` override.
pub(crate) fn crate_path(overridden: Option<&Path>) -> TokenStream {
    match overridden {
        Some(path) => quote!(#path),
        None => quote!(::agent_core),
    }
}

/// Parses the value of `crate = ...`: a path, or a string holding one (serde's spelling).
pub(crate) fn parse_crate_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse()
    } else {
        value.call(Path::parse_mod_style)
    }
}

/// The value of an integer option (`max_steps = 8`) as an `N`, or one error on the value: a
/// value that is not an integer literal gets `not_a_number`, an integer `N` cannot hold (a
/// negative one, or one too large) `out_of_range`, rather than the parser's own words ("invalid
/// digit found in string", "number too large to fit in target type").
pub(crate) fn int_option<N>(
    meta: &syn::meta::ParseNestedMeta<'_>,
    not_a_number: &str,
    out_of_range: &str,
) -> syn::Result<(syn::LitInt, N)>
where
    N: std::str::FromStr,
    N::Err: std::fmt::Display,
{
    let value = meta.value()?;
    // The sign apart from the literal, so that an error spans both (`-1`).
    let minus: Option<syn::Token![-]> = value.parse()?;
    let lit: Lit = value.parse().map_err(|error| match &minus {
        Some(minus) => syn::Error::new_spanned(minus, not_a_number),
        None => syn::Error::new(error.span(), not_a_number),
    })?;
    let Lit::Int(int) = &lit else {
        return Err(syn::Error::new_spanned(quote!(#minus #lit), not_a_number));
    };
    let digits = match minus {
        Some(_) => format!("-{}", int.base10_digits()),
        None => int.base10_digits().to_owned(),
    };
    match digits.parse::<N>() {
        Ok(number) => Ok((syn::LitInt::new(&digits, int.span()), number)),
        Err(_) => Err(syn::Error::new_spanned(quote!(#minus #lit), out_of_range)),
    }
}

/// A doc comment as the description the model reads.
pub(crate) enum Doc {
    /// Every line a literal (`///`, `#[doc = "..."]`): the lines trimmed and joined.
    Text(String),
    /// A line written by a macro (`#[doc = include_str!("search.md")]`, `concat!`): the lines
    /// concatenated by the compiler, which alone can expand them.
    Expr(TokenStream),
}

impl Doc {
    /// The first line, for the generated types' own docs (empty for a macro's text).
    pub(crate) fn first_line(&self) -> &str {
        match self {
            Doc::Text(text) => text.lines().next().unwrap_or_default(),
            Doc::Expr(_) => "",
        }
    }
}

impl quote::ToTokens for Doc {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Doc::Text(text) => text.to_tokens(tokens),
            Doc::Expr(expr) => expr.to_tokens(tokens),
        }
    }
}

/// The description of `///` comments (and `#[doc = ...]`), `None` when there is none.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<Doc> {
    let values: Vec<&Expr> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => Some(&nv.value),
            _ => None,
        })
        .collect();
    let literal = |value: &Expr| match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    };
    if values.iter().all(|value| literal(value).is_some()) {
        let lines: Vec<String> = values
            .iter()
            .filter_map(|value| literal(value))
            // `split`, not `lines`: an empty `///` line is `""`, which has no lines, and would
            // lose the blank line between two paragraphs.
            .flat_map(|text| {
                text.split('\n')
                    .map(|line| line.trim().to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        let text = lines.join("\n").trim().to_owned();
        return (!text.is_empty()).then_some(Doc::Text(text));
    }
    // Literal lines trimmed as above, a macro's text as it expands, one per line.
    let mut parts = Vec::new();
    for value in values {
        if !parts.is_empty() {
            parts.push(quote!("\n"));
        }
        parts.push(match literal(value) {
            Some(text) => {
                let text = text.trim();
                quote!(#text)
            }
            None => quote!(#value),
        });
    }
    Some(Doc::Expr(quote!(::core::concat!(#(#parts),*))))
}

/// A `ToolInput` impl for `ty` that accepts no tool: the placeholder written after an error,
/// so that code naming `ty` as a hook's input compiles on.
pub(crate) fn stub_tool_input(krate: &TokenStream, ty: &TokenStream) -> TokenStream {
    quote! {
        impl #krate::ToolInput for #ty {
            type Output = #krate::__private::serde_json::Value;

            fn accepts(_: &str) -> bool {
                false
            }

            fn from_args(_: &str, _: &#krate::AnyValue) -> ::core::option::Option<Self> {
                ::core::option::Option::None
            }

            fn into_args(
                self,
                _: &dyn #krate::DynTool,
            ) -> ::core::result::Result<#krate::AnyValue, ::std::string::String> {
                ::core::result::Result::Err(::std::string::String::new())
            }
        }
    }
}

/// `read_file` -> `ReadFile`.
pub(crate) fn pascal_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = true;
    for c in snake.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// 1 to 64 of `[A-Za-z0-9_-]`: what every provider accepts as a tool name.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What an attribute on a method inside `#[agent]` is to the agent.
#[derive(PartialEq, Eq)]
pub(crate) enum AttrKind {
    /// `#[name]`, `#[agent_core::name]`, `#[::agent_core::name]` or `#[<crate>::name]` with the
    /// agent's `crate = <crate>`.
    Ours,
    /// `#[other::name]` with another path: agent-core under another name, without `crate =`.
    OtherPath,
    /// Not `name` at all.
    No,
}

/// Recognises the agent's inner `#[tool]` / `#[hook]` by its whole path, not its last segment.
pub(crate) fn attr_kind(attr: &Attribute, name: &str, krate: Option<&Path>) -> AttrKind {
    let path = attr.path();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let Some((last, prefix)) = segments.split_last() else {
        return AttrKind::No;
    };
    if last != name {
        return AttrKind::No;
    }
    let ours = match krate {
        Some(krate) => {
            let krate: Vec<String> = krate.segments.iter().map(|s| s.ident.to_string()).collect();
            prefix.is_empty() || prefix == krate.as_slice()
        }
        None => prefix.is_empty() || prefix == ["agent_core"],
    };
    if ours {
        AttrKind::Ours
    } else {
        AttrKind::OtherPath
    }
}

/// Whether a type is agent-core's helper type `name`: `name`, `agent_core::name`,
/// `::agent_core::name` or `<crate>::name` (a type of the user's named like it is not).
pub(crate) fn is_helper_type(ty: &syn::Type, name: &str, krate: Option<&Path>) -> bool {
    let syn::Type::Path(p) = ty else {
        return false;
    };
    if p.qself.is_some() {
        return false;
    }
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let Some((last, prefix)) = segments.split_last() else {
        return false;
    };
    if last != name {
        return false;
    }
    let krate: Vec<String> = match krate {
        Some(krate) => krate.segments.iter().map(|s| s.ident.to_string()).collect(),
        None => vec!["agent_core".to_owned()],
    };
    prefix.is_empty() || prefix == krate.as_slice() || prefix == ["agent_core"]
}

/// Checks a tool name, reporting a bad one on `span`.
pub(crate) fn check_tool_name(cx: &Ctxt, name: &str, span: Span) {
    if !is_valid_tool_name(name) {
        cx.error_at(
            span,
            format!(
                "invalid tool name `{name}`: a tool name is 1 to 64 characters of `[A-Za-z0-9_-]`"
            ),
        );
    }
}

/// Whether a type names `Self` (`Self::Error`, `<Self as Trait>::Error`).
pub(crate) fn mentions_self(ty: &syn::Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            proc_macro2::TokenTree::Ident(ident) => ident == "Self",
            proc_macro2::TokenTree::Group(group) => walk(group.stream()),
            _ => false,
        })
    }
    walk(quote!(#ty))
}

/// The last segment's identifier of a type path (`std::string::String` -> `String`).
pub(crate) fn last_ident(ty: &syn::Type) -> Option<&syn::Ident> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// The generic type arguments of a type path's last segment.
pub(crate) fn generic_args(ty: &syn::Type) -> Vec<&syn::Type> {
    let syn::Type::Path(p) = ty else {
        return Vec::new();
    };
    let Some(last) = p.path.segments.last() else {
        return Vec::new();
    };
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return Vec::new();
    };
    args.args
        .iter()
        .filter_map(|arg| match arg {
            syn::GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect()
}

/// Whether a type is `Value` or a path ending `serde_json::Value` (the untyped JSON form).
pub(crate) fn is_json_value(ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else {
        return false;
    };
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    p.qself.is_none()
        && generic_args(ty).is_empty()
        && (segments == ["Value"]
            || segments.ends_with(&["serde_json".to_owned(), "Value".to_owned()]))
}

/// Whether a function's generics are lifetimes alone (`fn f<'a>(&'a self, ...)`), which the
/// generated calls leave to inference; type and const parameters are not.
pub(crate) fn lifetimes_only(generics: &syn::Generics) -> bool {
    generics
        .params
        .iter()
        .all(|param| matches!(param, syn::GenericParam::Lifetime(_)))
}

/// Whether a receiver is `&self`, or the same written out as `self: &Self` (not `self`,
/// `&mut self` or `self: Type` of another type).
pub(crate) fn is_shared_receiver(receiver: &syn::Receiver) -> bool {
    let shared = match &receiver.kind {
        syn::ReceiverKind::Reference(_, _, mutability) => mutability.is_none(),
        syn::ReceiverKind::Typed(_, ty) => matches!(
            &**ty,
            syn::Type::Reference(reference)
                if reference.mutability.is_none()
                    && matches!(&*reference.elem, syn::Type::Path(path)
                        if path.qself.is_none() && path.path.is_ident("Self"))
        ),
        _ => false,
    };
    shared && receiver.mutability.is_none()
}

/// Gives every token the same span, so rustc reports errors about generated code (an unmet
/// trait bound on a call, say) on the user's token that caused them.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut respanned =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                token = proc_macro2::TokenTree::Group(respanned);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// `FileAgent` -> `file_agent`: the module name part of an agent type.
pub(crate) fn snake_case(pascal: &str) -> String {
    let mut out = String::with_capacity(pascal.len() + 4);
    let chars: Vec<char> = pascal.trim_start_matches("r#").chars().collect();
    for (index, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let after_lower =
                index > 0 && (chars[index - 1].is_lowercase() || chars[index - 1].is_ascii_digit());
            let before_lower = index > 0
                && chars[index - 1].is_uppercase()
                && chars.get(index + 1).is_some_and(|next| next.is_lowercase());
            if (after_lower || before_lower) && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The visibility `vis` (written on a function in some module) means for an item declared one
/// module deeper: private becomes `pub(super)`, `pub(super)` becomes `pub(in super::super)`, and
/// `pub(in self::..)`/`pub(in super::..)` gain a `super`.
pub(crate) fn nested_vis(vis: &syn::Visibility) -> TokenStream {
    match vis {
        syn::Visibility::Public(_) => quote!(pub),
        syn::Visibility::Inherited => quote!(pub(super)),
        syn::Visibility::Restricted(restricted) => {
            let path = &restricted.path;
            let first = path.segments.first().map(|s| s.ident.to_string());
            match first.as_deref() {
                Some("crate") if path.leading_colon.is_none() => quote!(#vis),
                Some("self") => {
                    let rest = path.segments.iter().skip(1);
                    quote!(pub(in super #(::#rest)*))
                }
                Some("super") => quote!(pub(in super::#path)),
                _ => quote!(#vis),
            }
        }
    }
}

/// The widest of some visibilities, for a module holding items of each: `pub` if any is,
/// `pub(crate)` if any is restricted, private otherwise.
pub(crate) fn widest_vis<'a>(all: impl IntoIterator<Item = &'a syn::Visibility>) -> TokenStream {
    let mut widest = quote!();
    for vis in all {
        match vis {
            syn::Visibility::Public(_) => return quote!(pub),
            syn::Visibility::Restricted(_) => widest = quote!(pub(crate)),
            syn::Visibility::Inherited => {}
        }
    }
    widest
}

/// Rewrites a user's type for use inside a generated module that glob-imports its parent
/// (`use super::*`): a path starting with a name the module itself defines (a tool `weather`
/// returning the user's own `Weather`) is pointed back at the parent's item (`super::Weather`),
/// or at std's for the prelude's types.
pub(crate) fn unshadow(ty: &syn::Type, generated: &[syn::Ident]) -> syn::Type {
    struct Unshadow<'a>(&'a [syn::Ident]);
    impl syn::visit_mut::VisitMut for Unshadow<'_> {
        fn visit_type_path_mut(&mut self, node: &mut syn::TypePath) {
            syn::visit_mut::visit_type_path_mut(self, node);
            if node.qself.is_some() || node.path.leading_colon.is_some() {
                return;
            }
            let Some(first) = node.path.segments.first() else {
                return;
            };
            if !self.0.contains(&first.ident) {
                return;
            }
            let prefix: syn::Path = match first.ident.to_string().as_str() {
                "String" => syn::parse_quote!(::std::string),
                "Vec" => syn::parse_quote!(::std::vec),
                "Box" => syn::parse_quote!(::std::boxed),
                "Option" => syn::parse_quote!(::core::option),
                "Result" => syn::parse_quote!(::core::result),
                _ => syn::parse_quote!(super),
            };
            let rest = std::mem::take(&mut node.path.segments);
            node.path.leading_colon = prefix.leading_colon;
            node.path.segments = prefix.segments;
            node.path.segments.extend(rest);
        }
    }
    let mut ty = ty.clone();
    syn::visit_mut::VisitMut::visit_type_mut(&mut Unshadow(generated), &mut ty);
    ty
}

/// What a parameter's type is to an agent that declares `context = T`.
pub(crate) enum ContextParam<'a> {
    /// `&T`: the run context, passed from `agent_core::run_context::<T>()`.
    Context,
    /// `&Other` with `Other` a type path: meant as the context, of the wrong type.
    WrongType(&'a syn::Type),
    /// Anything else.
    No,
}

/// Whether `ty` is a shared reference to the agent's declared context type. Recognised by
/// the type path's last segment and its generic arguments (`&User`, `&crate::User` and
/// `&app::User` all match `context = User`); an alias is not recognised. `&str` and `&[T]` are
/// never taken for a context.
pub(crate) fn context_param<'a>(
    ty: &'a syn::Type,
    declared: Option<&syn::Type>,
) -> ContextParam<'a> {
    let (Some(declared), syn::Type::Reference(reference)) = (declared, ty) else {
        return ContextParam::No;
    };
    let syn::Type::Path(written) = &*reference.elem else {
        return ContextParam::No;
    };
    if reference.mutability.is_some() || written.qself.is_some() || written.path.is_ident("str") {
        return ContextParam::No;
    }
    let last = |ty: &syn::Type| match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| {
            let arguments = &s.arguments;
            (s.ident.to_string(), quote!(#arguments).to_string())
        }),
        _ => None,
    };
    if last(&reference.elem).is_some() && last(&reference.elem) == last(declared) {
        ContextParam::Context
    } else {
        ContextParam::WrongType(&reference.elem)
    }
}

/// `&*<name>` spanned over `ty` (its first token's span on `&`, its last's on the name), so a
/// type mismatch of the argument is reported under the whole parameter type, on stable too.
pub(crate) fn borrow_spanned_over(name: &proc_macro2::Ident, ty: &syn::Type) -> TokenStream {
    let tokens: Vec<proc_macro2::TokenTree> = quote!(#ty).into_iter().collect();
    let (first, last) = match (tokens.first(), tokens.last()) {
        (Some(first), Some(last)) => (first.span(), last.span()),
        _ => (Span::call_site(), Span::call_site()),
    };
    let star = quote::quote_spanned!(first=> &*);
    let mut name = name.clone();
    name.set_span(last);
    quote!(#star #name)
}

/// The sentence for a `&Other` parameter where the agent's context is `declared`.
pub(crate) fn wrong_context_message(declared: &syn::Type, written: &syn::Type) -> String {
    let declared = quote!(#declared).to_string().replace(' ', "");
    let written = quote!(#written).to_string().replace(' ', "");
    format!(
        "`{written}` is not this agent's run context: the agent declares `context = {declared}`, so write `&{declared}` here (or change `context = ...` in `#[agent(...)]`)"
    )
}

/// The edit distance between two names (insertions, deletions, substitutions, transpositions).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// The valid name closest to a misspelt one, when it is close enough to be what was meant
/// (at most a third of its letters changed).
pub(crate) fn closest<'a>(
    written: &str,
    valid: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    valid
        .into_iter()
        .map(|name| (edit_distance(written, name), name))
        .filter(|&(distance, name)| distance > 0 && distance * 3 <= name.len().max(3))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, name)| name)
}

/// An unknown option's message: the suggestion when one is close, then the valid keys.
pub(crate) fn unknown_option(attr: &str, written: &str, valid: &[&str]) -> String {
    let list = valid
        .iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match closest(written, valid.iter().copied()) {
        Some(best) => format!(
            "unknown `#[{attr}]` option `{written}`; did you mean `{best}`? (options: {list})"
        ),
        None => format!("unknown `#[{attr}]` option `{written}`; expected one of: {list}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, snake_case};

    #[test]
    fn closest_suggests_only_near_names() {
        let events = ["before_tool_call", "after_tool_call", "on_chunk"];
        assert_eq!(closest("before_tool_cal", events), Some("before_tool_call"));
        assert_eq!(closest("on_chnuk", events), Some("on_chunk"));
        assert_eq!(
            closest("on_chunk", events),
            None,
            "an exact name is not misspelt"
        );
        assert_eq!(closest("colour", events), None);
    }

    #[test]
    fn snake_case_of_agent_names() {
        assert_eq!(snake_case("FileAgent"), "file_agent");
        assert_eq!(snake_case("Files"), "files");
        assert_eq!(snake_case("HTTPAgent"), "http_agent");
        assert_eq!(snake_case("Agent2Go"), "agent2_go");
    }
}
