//! Parsing `#[run_hooks(...)]` options and checking each method of the impl block against the
//! `RunHooks` signature of its name: every mistake is one error on its token, and a method
//! with one is set aside (still compiled, in an impl of its own) so nothing cascades.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::Parser;
use syn::{FnArg, ImplItem, ImplItemFn, ItemImpl, Path, ReturnType, Type, Visibility};

use super::{Param, RUN_HOOKS, RunHook};
use crate::common::{closest, is_helper_type, is_shared_receiver, parse_crate_value};
use crate::ctxt::Ctxt;

/// The options of `#[run_hooks(...)]`.
#[derive(Default)]
pub(crate) struct RunHooksAttr {
    pub(crate) crate_path: Option<Path>,
}

impl RunHooksAttr {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> RunHooksAttr {
        let mut attr = RunHooksAttr::default();
        let parser = syn::meta::parser(|meta| {
            if !meta.path.is_ident("crate") {
                let key = meta.path.get_ident().map(ToString::to_string);
                return Err(meta.error(crate::common::unknown_option(
                    "run_hooks",
                    &key.unwrap_or_default(),
                    &["crate"],
                )));
            }
            if attr.crate_path.is_some() {
                return Err(meta.error("duplicate `crate` option: give it once"));
            }
            attr.crate_path = Some(parse_crate_value(&meta)?);
            Ok(())
        });
        if let Err(error) = parser.parse2(args) {
            cx.syn_error(error);
        }
        attr
    }
}

/// An impl block under `#[run_hooks]`, its methods sorted.
pub(crate) struct RunHooksImpl {
    pub(crate) item: ItemImpl,
    /// The run hooks, as written.
    pub(crate) hooks: Vec<ImplItemFn>,
    /// Methods with a mistake and other items (reported), kept so code using them still
    /// compiles.
    pub(crate) set_aside: Vec<ImplItem>,
}

/// Sorts the methods of an inherent impl block.
pub(crate) fn collect(cx: &Ctxt, mut item: ItemImpl, krate: Option<&Path>) -> RunHooksImpl {
    let mut hooks = Vec::new();
    let mut set_aside = Vec::new();
    for impl_item in std::mem::take(&mut item.items) {
        match impl_item {
            ImplItem::Fn(method) => {
                if check_method(cx, &method, krate) {
                    hooks.push(method);
                } else {
                    set_aside.push(ImplItem::Fn(method));
                }
            }
            other => {
                cx.error_spanned_by(
                    &other,
                    "a `#[run_hooks]` impl holds only run hook methods: move this to an impl block of its own",
                );
                // Constants and macro calls are kept, so code using them compiles on (an
                // inherent impl may not hold an associated type: that goes).
                if matches!(other, ImplItem::Const(_) | ImplItem::Macro(_)) {
                    set_aside.push(other);
                }
            }
        }
    }
    RunHooksImpl {
        item,
        hooks,
        set_aside,
    }
}

/// Checks a method against the run hook of its name; `false` after reporting its mistakes.
fn check_method(cx: &Ctxt, method: &ImplItemFn, krate: Option<&Path>) -> bool {
    let sig = &method.sig;
    let name = sig.ident.to_string();
    let Some(hook) = RUN_HOOKS.iter().find(|hook| hook.name == name) else {
        let names = RUN_HOOKS.iter().map(|hook| hook.name);
        let message = match closest(&name, names.clone()) {
            Some(best) => format!("unknown run hook `{name}`; did you mean `{best}`?"),
            None => format!(
                "`{name}` is not a run hook (they are {}): a `#[run_hooks]` impl holds only run hook methods, so move it to an impl block of its own",
                names
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        cx.error_spanned_by(&sig.ident, message);
        return false;
    };
    let mut fits = true;
    let mut error = |tokens: TokenStream, message: String| {
        cx.error_spanned_by(tokens, message);
        fits = false;
    };
    if !matches!(method.vis, Visibility::Inherited) {
        let vis = method.vis.to_token_stream();
        let written = vis.to_string().replace(' ', "");
        error(
            vis,
            format!(
                "run hooks are methods of the `RunHooks` impl, which have no visibility: remove `{written}`"
            ),
        );
    }
    if let Some(asyncness) = &sig.asyncness {
        error(
            asyncness.to_token_stream(),
            "run hooks are called inline and cannot be `async`: remove `async`, and spawn a task (`tokio::spawn`) for slow work".to_owned(),
        );
    }
    if !sig.generics.params.is_empty() {
        error(
            sig.generics.to_token_stream(),
            format!("a run hook cannot be generic: write `{}`", hook.signature()),
        );
    }
    match sig.receiver() {
        Some(receiver) if is_shared_receiver(receiver) => {}
        Some(receiver) => error(
            receiver.to_token_stream(),
            "a run hook takes `&self`: one observer sees every event of the run (keep what it records behind a `Mutex`)".to_owned(),
        ),
        None => error(
            sig.ident.to_token_stream(),
            format!(
                "a run hook is a method taking `&self`: write `{}`",
                hook.signature()
            ),
        ),
    }
    check_params(sig, hook, krate, &mut error);
    if let ReturnType::Type(_, ty) = &sig.output {
        error(
            ty.to_token_stream(),
            "run hooks observe only and return nothing: remove the return type".to_owned(),
        );
    }
    fits
}

/// The parameters after the receiver: as many as the run hook's, each of its type.
fn check_params(
    sig: &syn::Signature,
    hook: &RunHook,
    krate: Option<&Path>,
    error: &mut dyn FnMut(TokenStream, String),
) {
    let params: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(param) => Some(param),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let wanted = hook.params.len();
    if params.len() != wanted {
        let count = |n: usize| match n {
            1 => "1 parameter".to_owned(),
            n => format!("{n} parameters"),
        };
        let message = format!(
            "`{}` takes {} after `&self`, not {}: write `{}`",
            hook.name,
            count(wanted),
            params.len(),
            hook.signature()
        );
        match params.get(wanted) {
            Some(extra) => error(extra.to_token_stream(), message),
            None => {
                // The parentheses, empty: spans the parameter list where one is missing.
                let mut parens = TokenStream::new();
                sig.paren_token.surround(&mut parens, |_| {});
                error(parens, message);
            }
        }
        return;
    }
    for (param, (name, expected)) in params.iter().zip(hook.params) {
        if !fits(*expected, &param.ty, krate) {
            error(
                param.ty.to_token_stream(),
                format!(
                    "`{}` takes `{name}: {}` here: write `{}`",
                    hook.name,
                    expected.written(),
                    hook.signature()
                ),
            );
        }
    }
}

/// Whether a parameter's type is the run hook's.
fn fits(expected: Param, ty: &Type, krate: Option<&Path>) -> bool {
    let shared = |ty: &Type| match ty {
        Type::Reference(reference) if reference.mutability.is_none() => {
            Some((*reference.elem).clone())
        }
        _ => None,
    };
    match expected {
        Param::Usize => is_primitive(ty, "usize"),
        Param::Str => shared(ty).is_some_and(|elem| is_primitive(&elem, "str")),
        Param::Borrowed(name) => shared(ty).is_some_and(|elem| is_helper_type(&elem, name, krate)),
    }
}

/// `name`, or `core::primitive::name` / `std::primitive::name`.
fn is_primitive(ty: &Type, name: &str) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    path.qself.is_none()
        && path
            .path
            .segments
            .iter()
            .all(|segment| segment.arguments.is_none())
        && (segments == [name] || segments.ends_with(&["primitive".to_owned(), name.to_owned()]))
}
