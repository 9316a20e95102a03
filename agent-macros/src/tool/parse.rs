//! Parsing a tool function into a [`ToolFn`]: its name, description, parameters and output.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::{Attribute, FnArg, Ident, LitStr, Pat, Path, ReturnType, Signature, Type, Visibility};

use crate::common::{check_tool_name, doc_text, last_ident, parse_crate_value, pascal_case};
use crate::ctxt::Ctxt;

/// The options of `#[tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub(crate) name: Option<LitStr>,
    pub(crate) crate_path: Option<Path>,
}

impl ToolAttr {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> ToolAttr {
        let mut attr = ToolAttr::default();
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("name") {
                if attr.name.is_some() {
                    return Err(meta.error("duplicate `name` option"));
                }
                attr.name = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("crate") {
                if attr.crate_path.is_some() {
                    return Err(meta.error("duplicate `crate` option"));
                }
                attr.crate_path = Some(parse_crate_value(&meta)?);
            } else {
                return Err(
                    meta.error("unknown `#[tool]` option; expected one of: `name`, `crate`")
                );
            }
            Ok(())
        });
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
        }
        attr
    }
}

/// A parsed tool.
pub(crate) struct ToolFn {
    pub(crate) attr: ToolAttr,
    pub(crate) vis: Visibility,
    /// The function's name.
    pub(crate) ident: Ident,
    /// The tool's name, as the model calls it.
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) description: String,
    pub(crate) is_async: bool,
    pub(crate) has_receiver: bool,
    /// The arguments, in declaration order.
    pub(crate) params: Vec<ToolParam>,
    /// The function's parameters in order: `None` is the context parameter.
    pub(crate) call_order: Vec<Option<usize>>,
    pub(crate) output: Output,
}

pub(crate) struct ToolParam {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) docs: Vec<Attribute>,
    pub(crate) default: Option<syn::Expr>,
}

/// What the function returns.
pub(crate) enum Output {
    /// No return type.
    Unit,
    /// `-> T`.
    Plain(Type),
    /// `-> Result<T, E>` (any path ending in `Result` with a type argument).
    Fallible(Type),
}

impl ToolFn {
    /// The generated tool type's name (`read_file` -> `ReadFile`).
    pub(crate) fn type_ident(&self) -> Ident {
        Ident::new(&pascal_case(&self.ident.to_string()), self.ident.span())
    }

    /// The generated args type's name (`ReadFileArgs`).
    pub(crate) fn args_ident(&self) -> Ident {
        Ident::new(
            &format!("{}Args", pascal_case(&self.ident.to_string())),
            self.ident.span(),
        )
    }
}

/// Parses a tool function's signature; strips the parameter attributes it consumes from `sig`.
/// Returns `None` only when the signature is unusable (errors are in `cx`).
pub(crate) fn parse_tool(
    cx: &Ctxt,
    attr: ToolAttr,
    attrs: &[Attribute],
    vis: &Visibility,
    sig: &mut Signature,
) -> Option<ToolFn> {
    let (name, name_span) = match &attr.name {
        Some(lit) => (lit.value(), lit.span()),
        None => (
            sig.ident.to_string().trim_start_matches("r#").to_owned(),
            sig.ident.span(),
        ),
    };
    check_tool_name(cx, &name, name_span);
    let description = doc_text(attrs).unwrap_or_else(|| {
        cx.error_spanned_by(
            &sig.ident,
            format!("tool `{name}` has no description: add a `///` doc comment saying what it does (the model reads it)"),
        );
        String::new()
    });
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool function cannot be generic: its arguments must have one JSON Schema",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool function cannot be variadic");
    }
    if let Some(receiver) = sig.receiver()
        && !crate::common::is_shared_receiver(receiver)
    {
        cx.error_spanned_by(
            receiver,
            "a tool method takes `&self` (agents are shared between concurrent calls)",
        );
    }

    let mut params = Vec::new();
    let mut call_order = Vec::new();
    for input in sig.inputs.iter_mut() {
        let FnArg::Typed(typed) = input else { continue };
        let docs: Vec<Attribute> = typed
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect();
        let mut default = None;
        for arg_attr in typed.attrs.iter().filter(|a| a.path().is_ident("arg")) {
            let result = arg_attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("default") {
                    if default.is_some() {
                        return Err(meta.error("duplicate `default` option"));
                    }
                    default = Some(meta.value()?.parse::<syn::Expr>()?);
                    Ok(())
                } else {
                    Err(meta.error("unknown `#[arg]` option; expected `default`"))
                }
            });
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }
        typed
            .attrs
            .retain(|a| !a.path().is_ident("doc") && !a.path().is_ident("arg"));
        if last_ident(&typed.ty).is_some_and(|ident| ident == "ToolContext") {
            if call_order.contains(&None) {
                cx.error_spanned_by(
                    &typed.ty,
                    "a tool takes at most one `ToolContext` parameter",
                );
            }
            call_order.push(None);
            continue;
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                cx.error_spanned_by(
                    other,
                    "a tool parameter must be a plain name: it becomes a field of the arguments",
                );
                continue;
            }
        };
        if let Type::Reference(reference) = &*typed.ty {
            cx.error_spanned_by(
                reference,
                "a tool parameter must be an owned type (the model's JSON is deserialized into it): use `String` for `&str`",
            );
            continue;
        }
        if let Type::ImplTrait(impl_trait) = &*typed.ty {
            cx.error_spanned_by(
                impl_trait,
                "a tool parameter needs a concrete type (it gets a JSON Schema)",
            );
            continue;
        }
        call_order.push(Some(params.len()));
        params.push(ToolParam {
            ident,
            ty: (*typed.ty).clone(),
            docs,
            default,
        });
    }

    let output = match &sig.output {
        ReturnType::Default => Output::Unit,
        ReturnType::Type(_, ty) => {
            if let Type::ImplTrait(impl_trait) = &**ty {
                cx.error_spanned_by(
                    impl_trait,
                    "a tool must return a concrete type that implements `Serialize`",
                );
                return None;
            }
            let is_result = last_ident(ty).is_some_and(|ident| ident == "Result");
            match crate::common::generic_args(ty).first() {
                Some(ok) if is_result => Output::Fallible((*ok).clone()),
                _ => Output::Plain((**ty).clone()),
            }
        }
    };

    Some(ToolFn {
        vis: vis.clone(),
        ident: sig.ident.clone(),
        name,
        name_span,
        description,
        is_async: sig.asyncness.is_some(),
        has_receiver: sig.receiver().is_some(),
        params,
        call_order,
        output,
        attr,
    })
}
