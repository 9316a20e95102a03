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

/// The text of `///` comments (and `#[doc = "..."]`), lines trimmed and joined.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| {
            text.lines()
                .map(|line| line.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
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

/// Whether an attribute is ours: `#[name]` or `#[agent_core::name]` (or the overridden crate).
pub(crate) fn is_our_attr(attr: &Attribute, name: &str) -> bool {
    let path = attr.path();
    if path.is_ident(name) {
        return true;
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.len() == 2
        && segments[1] == name
        && (segments[0] == "agent_core" || segments[0] == "crate")
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

/// Whether a type is spelled `Value` or `serde_json::Value` (the untyped JSON form).
pub(crate) fn is_json_value(ty: &syn::Type) -> bool {
    last_ident(ty).is_some_and(|ident| ident == "Value") && generic_args(ty).is_empty()
}

/// Whether a receiver is `&self` (not `self`, `&mut self` or `self: Type`).
pub(crate) fn is_shared_receiver(receiver: &syn::Receiver) -> bool {
    matches!(receiver.kind, syn::ReceiverKind::Reference(_, _, None))
        && receiver.mutability.is_none()
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
