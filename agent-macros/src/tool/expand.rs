//! Code for one tool: its args struct and tool type (declared in a generated module, so two
//! agents' `read_file` tools, or a tool `weather` beside the user's own `Weather`, never collide),
//! and their trait impls (beside the function, where the user's names resolve as written).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::parse::{Approval, ErrorType, Output, Slot, ToolFn};
use crate::common::{borrow_spanned_over, crate_path, nested_vis, respan, unshadow};

/// Where the tool function lives.
pub(crate) enum ToolOwner<'a> {
    /// A free function.
    Free,
    /// A method of the agent type.
    Method(&'a syn::Type),
}

/// One tool's code: `defs` go inside the generated module, `impls` beside the function.
pub(crate) struct ToolCode {
    pub(crate) defs: TokenStream,
    pub(crate) impls: TokenStream,
}

/// `serde(crate = "...")` and `schemars(crate = "...")` take the path as a string.
fn path_string(tokens: TokenStream) -> String {
    tokens.to_string().replace(' ', "")
}

/// The type giving parameter `param`'s schema to the args struct's derive.
fn param_schema_ident(args_ty: &Ident, param: &Ident) -> Ident {
    format_ident!(
        "__{}_{}",
        args_ty,
        param.to_string().trim_start_matches("r#")
    )
}

/// The associated function deserializing parameter `param` (`__de_city`).
fn deserialize_fn(param: &Ident) -> Ident {
    format_ident!("__de_{}", param.to_string().trim_start_matches("r#"))
}

/// The associated function giving defaulted parameter `param`'s default (`__default_limit`).
fn default_fn(param: &Ident) -> Ident {
    format_ident!("__default_{}", param.to_string().trim_start_matches("r#"))
}

/// The associated function deserializing defaulted parameter `param`, `null` included
/// (`__nullable_limit`).
fn nullable_fn(param: &Ident) -> Ident {
    format_ident!("__nullable_{}", param.to_string().trim_start_matches("r#"))
}

/// Whether serde's derive takes `ty` for an `Option` (a missing field is then `None`): the
/// last segment of a path is `Option`, with one type argument.
fn is_option(ty: &syn::Type) -> bool {
    let syn::Type::Path(path) = ty else {
        return false;
    };
    path.path.segments.last().is_some_and(|last| {
        last.ident == "Option"
            && matches!(&last.arguments, syn::PathArguments::AngleBracketed(args) if args.args.len() == 1)
    })
}

/// The args struct's `Clone`, `Debug` and `Serialize`, written field by field through
/// `ParamProbe`: a parameter type lacking one of them is then reported once, by the
/// `ToolParam` check at the parameter's type, instead of by a derive here as well.
fn args_traits(
    tool: &ToolFn,
    private: &TokenStream,
    args_path: &TokenStream,
    args_ty: &Ident,
) -> TokenStream {
    let probes = quote!(use #private::{ParamHasTraits as _, ParamLacksTraits as _};);
    let probe = |ty: &syn::Type| quote!((&#private::ParamProbe::<#ty>::new()));
    let names: Vec<String> = tool
        .params
        .iter()
        .map(|param| param.ident.to_string().trim_start_matches("r#").to_owned())
        .collect();
    let clones = tool.params.iter().map(|param| {
        let (ident, probe) = (&param.ident, probe(&param.ty));
        quote!(#ident: #probe.clone_param(&self.#ident))
    });
    let debugs = tool.params.iter().zip(&names).map(|(param, name)| {
        let (ident, probe) = (&param.ident, probe(&param.ty));
        quote!(.field(#name, #probe.debug_param(&self.#ident)))
    });
    let serializes = tool.params.iter().zip(&names).map(|(param, name)| {
        let (ident, probe) = (&param.ident, probe(&param.ty));
        quote!(__state.serialize_field(#name, #probe.serialize_param(&self.#ident))?;)
    });
    let struct_name = args_ty.to_string();
    let len = tool.params.len();
    quote! {
        impl ::core::clone::Clone for #args_path {
            fn clone(&self) -> Self {
                #probes
                Self { #(#clones,)* }
            }
        }

        impl ::core::fmt::Debug for #args_path {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #probes
                f.debug_struct(#struct_name) #(#debugs)* .finish()
            }
        }

        impl #private::serde::Serialize for #args_path {
            fn serialize<S: #private::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                use #private::serde::ser::SerializeStruct as _;
                #probes
                let mut __state = serializer.serialize_struct(#struct_name, #len)?;
                #(#serializes)*
                __state.end()
            }
        }
    }
}

/// The function turning a fallible tool's error into a `ToolError`, spanned on the error type
/// (on `Result` for an alias that does not write it): an error type without `Display` is then
/// one error there, in `ToolErrorType`'s words, rather than one about generated code.
fn tool_error(private: &TokenStream, error: &ErrorType) -> TokenStream {
    match error {
        ErrorType::Written(ty) => respan(quote!(#private::tool_error::<#ty>), ty.span()),
        ErrorType::Implied(span) => respan(quote!(#private::tool_error), *span),
    }
}

/// The names a tool declares in its module (which shadow the parent's names there).
pub(crate) fn declared_names(tool: &ToolFn) -> [Ident; 2] {
    [tool.type_ident(), tool.args_ident()]
}

/// A free tool: the module `<fn>_tool` holding `<Tool>` and `<Tool>Args`, and their impls.
/// With `stub`, after an error: the same types with placeholder impls, so code using them
/// compiles on and only the error is reported.
pub(crate) fn expand_free_tool(tool: &ToolFn, stub: bool) -> TokenStream {
    let krate = crate_path(tool.attr.crate_path.as_ref());
    let module = tool.module_ident();
    let ToolCode { defs, impls } = tool_code(
        tool,
        &ToolOwner::Free,
        &krate,
        &quote!(#module),
        &declared_names(tool),
        stub,
    );
    let doc = format!(
        "The types `#[tool]` generates for `{}`: the tool `{}` and its arguments `{}`.",
        tool.ident,
        tool.type_ident(),
        tool.args_ident()
    );
    let vis = &tool.vis;
    quote! {
        #[doc = #doc]
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;
            #defs
        }
        #impls
    }
}

/// The args struct and tool type of `tool` (for the module `module`), and their impls.
/// `shadowed` lists every name the module declares; `krate` is the agent's crate path for
/// methods, the tool's own for free functions.
pub(crate) fn tool_code(
    tool: &ToolFn,
    owner: &ToolOwner<'_>,
    krate: &TokenStream,
    module: &TokenStream,
    shadowed: &[Ident],
    stub: bool,
) -> ToolCode {
    let stub = stub || matches!(tool.output, Output::MalformedStream);
    let private = quote!(#krate::__private);
    let vis = nested_vis(&tool.vis);
    let fn_ident = &tool.ident;
    let tool_ty = tool.type_ident();
    let args_ty = tool.args_ident();
    let name = &tool.name;
    let description = &tool.description;
    let args_doc = format!("Arguments of the `{name}` tool.");
    let tool_doc = format!("The `{name}` tool: {}", tool.description.first_line());

    let tool_struct = match owner {
        ToolOwner::Method(self_ty) if tool.has_receiver => {
            let self_ty = unshadow(self_ty, shadowed);
            quote! {
                #[doc = #tool_doc]
                #[derive(::core::clone::Clone)]
                #vis struct #tool_ty(pub ::std::sync::Arc<#self_ty>);
            }
        }
        _ => quote! {
            #[doc = #tool_doc]
            #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
            #vis struct #tool_ty;
        },
    };
    let field_defs = tool.params.iter().map(|param| {
        let ident = &param.ident;
        let ty = unshadow(&param.ty, shadowed);
        let docs = &param.docs;
        let serde_attr = (!stub).then(|| match &param.default {
            Some(_) => {
                let path = format!("{args_ty}::{}", default_fn(ident));
                let nullable_path = format!("{args_ty}::{}", nullable_fn(ident));
                quote!(#[serde(default = #path, deserialize_with = #nullable_path)])
            }
            None => {
                let path = format!("{args_ty}::{}", deserialize_fn(ident));
                // A missing `Option` field is `None`, as serde's derive makes it without
                // `deserialize_with` (which it tells by the same syntactic test). The args
                // struct's `Serialize` is written by hand, so `skip_serializing_if` is read by
                // schemars alone: it keeps that `None` out of the schema as a default.
                let default = is_option(&param.ty).then(|| {
                    quote!(
                        default,
                        skip_serializing_if = "::core::option::Option::is_none",
                    )
                });
                quote!(#[serde(#default deserialize_with = #path)])
            }
        });
        let schema_attr = (!stub).then(|| {
            let with = param_schema_ident(&args_ty, ident).to_string();
            quote!(#[schemars(with = #with)])
        });
        quote! {
            #(#docs)*
            #serde_attr
            #schema_attr
            pub #ident: #ty
        }
    });

    if stub {
        let struct_name = args_ty.to_string();
        let defs = quote! {
            #[doc = #args_doc]
            #[allow(dead_code)]
            #vis struct #args_ty {
                #(#field_defs,)*
            }

            #tool_struct
        };
        let stub_input =
            crate::common::stub_tool_input(&quote!(#krate), &quote!(#module::#args_ty));
        let impls = quote! {
            impl #krate::Tool for #module::#tool_ty {
                const NAME: &'static str = #name;
                const DESCRIPTION: &'static str = #description;
                type Args = #private::serde_json::Value;
                type Output = #private::serde_json::Value;

                fn schema() -> &'static #private::serde_json::Value {
                    ::core::unimplemented!()
                }

                fn call(
                    &self,
                    _: #private::serde_json::Value,
                    _: #krate::ToolContext,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<#private::serde_json::Value, #krate::ToolError>,
                > + ::core::marker::Send {
                    ::core::future::pending()
                }
            }

            #stub_input

            impl #private::AcceptsTool<#module::#tool_ty> for #module::#args_ty {}

            // What hooks reading the args call (`ctx.input.clone()`, `{:?}`) and an agent's
            // input enum holding them needs, so that they add no error to the one reported.
            impl ::core::clone::Clone for #module::#args_ty {
                fn clone(&self) -> Self {
                    ::core::unreachable!()
                }
            }

            impl ::core::fmt::Debug for #module::#args_ty {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(#struct_name)
                }
            }

            impl #private::serde::Serialize for #module::#args_ty {
                fn serialize<S: #private::serde::Serializer>(
                    &self,
                    _: S,
                ) -> ::core::result::Result<S::Ok, S::Error> {
                    ::core::unreachable!()
                }
            }
        };
        return ToolCode { defs, impls };
    }

    // Each parameter's schema goes through a type of its own that asks `ParamProbe` for it: a
    // parameter type without a JSON Schema is then reported once, by the `ToolParam` check
    // below, at the parameter's type, instead of by the derive in terms of `__private`.
    let param_schemas = tool.params.iter().map(|param| {
        let schema_ty = param_schema_ident(&args_ty, &param.ident);
        let ty = unshadow(&param.ty, shadowed);
        let probe = quote! {
            use #private::{ParamHasSchema as _, ParamLacksSchema as _};
            (&#private::ParamProbe::<#ty>::new())
        };
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            struct #schema_ty;

            impl #private::schemars::JsonSchema for #schema_ty {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    #probe.schema_name()
                }

                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    #probe.schema_id()
                }

                fn inline_schema() -> bool {
                    #probe.inline_schema()
                }

                fn json_schema(
                    generator: &mut #private::schemars::SchemaGenerator,
                ) -> #private::schemars::Schema {
                    #probe.json_schema(generator)
                }

                fn _schemars_private_is_option() -> bool {
                    #probe.is_option()
                }
            }
        }
    });
    let param_checks = tool.params.iter().map(|param| {
        let ty = &param.ty;
        // Only the call is spanned at the type, where its error goes: the imports keep the
        // macro's span, so the one of them not used is no warning in the user's code.
        let call = respan(
            quote!(#private::tool_param::<#ty, _>((&#private::ParamProbe::<#ty>::new()).verdict());),
            ty.span(),
        );
        quote! {
            const _: () = {
                #[allow(dead_code)]
                fn __param() {
                    use #private::{ParamHasTraits as _, ParamLacksTraits as _};
                    #call
                }
            };
        }
    });
    let serde_crate = path_string(quote!(#private::serde));
    let schemars_crate = path_string(quote!(#private::schemars));
    let defs = quote! {
        #[doc = #args_doc]
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        // An unknown field is an error the model reads, as the schema's
        // `additionalProperties: false` says, not a misspelt parameter left at its default.
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        #vis struct #args_ty {
            #(#field_defs,)*
        }

        #(#param_schemas)*

        #tool_struct
    };

    // The fields' default values and deserializers, called by the args struct's derive.
    let mut field_fns = Vec::new();
    for param in &tool.params {
        let Some(expr) = &param.default else { continue };
        let ident = &param.ident;
        let ty = &param.ty;
        let default_fn = default_fn(ident);
        let nullable_fn = nullable_fn(ident);
        field_fns.push(quote_spanned! {expr.span()=>
            #[doc(hidden)]
            fn #default_fn() -> #ty {
                #expr
            }
        });
        // `null` also means "use the default": providers' strict modes make every parameter
        // required and send `null` for the ones the model leaves out.
        field_fns.push(quote! {
            #[doc(hidden)]
            fn #nullable_fn<'de, D: #private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<#ty, D::Error> {
                use #private::{ParamHasTraits as _, ParamLacksTraits as _};
                let value = (&#private::ParamProbe::<::core::option::Option<#ty>>::new())
                    .deserialize_param(deserializer)?;
                ::core::result::Result::Ok(value.unwrap_or_else(Self::#default_fn))
            }
        });
    }
    for param in tool.params.iter().filter(|param| param.default.is_none()) {
        let ty = &param.ty;
        let de_fn = deserialize_fn(&param.ident);
        field_fns.push(quote! {
            #[doc(hidden)]
            fn #de_fn<'de, D: #private::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<#ty, D::Error> {
                use #private::{ParamHasTraits as _, ParamLacksTraits as _};
                (&#private::ParamProbe::<#ty>::new()).deserialize_param(deserializer)
            }
        });
    }
    let field_fns_impl = (!field_fns.is_empty()).then(|| {
        quote! {
            impl #module::#args_ty {
                #(#field_fns)*
            }
        }
    });
    let args_traits = args_traits(tool, &private, &quote!(#module::#args_ty), &args_ty);
    let call_args = tool.call_order.iter().map(|slot| match slot {
        // Fields, not bindings: a parameter named like the function (`fn note(note: Note)`)
        // must not shadow the function called.
        Slot::Arg(index) => {
            let ident = &tool.params[*index].ident;
            quote!(__args.#ident)
        }
        Slot::ToolContext => quote!(__ctx),
        Slot::RunContext(_, written) => {
            borrow_spanned_over(&format_ident!("__run_context"), written)
        }
    });
    // The run context, read before the call: a missing one (or one of another type) is an
    // error result the model reads.
    let run_context = tool.call_order.iter().find_map(|slot| match slot {
        Slot::RunContext(declared, _) => Some(quote! {
            let __run_context = match #krate::run_context::<#declared>() {
                ::core::result::Result::Ok(context) => context,
                ::core::result::Result::Err(error) => {
                    return ::core::result::Result::Err(#krate::ToolError::from_display(error));
                }
            };
        }),
        _ => None,
    });
    let callee = match owner {
        ToolOwner::Free => quote!(#fn_ident),
        ToolOwner::Method(_) if tool.has_receiver => quote!(self.0.#fn_ident),
        ToolOwner::Method(self_ty) => quote!(<#self_ty>::#fn_ident),
    };
    let awaited = tool.is_async.then(|| quote!(.await));
    let (output_ty, wrap) = match &tool.output {
        Output::Unit => (
            quote!(()),
            quote!({
                __output;
                ::core::result::Result::Ok(())
            }),
        ),
        Output::Plain(ty) => (
            quote_spanned!(ty.span()=> #ty),
            quote!(::core::result::Result::Ok(__output)),
        ),
        Output::Fallible(ty, error) => {
            let into_error = tool_error(&private, error);
            (
                quote_spanned!(ty.span()=> #ty),
                // A call, not `map_err(__output, f)`: passing the function would check its
                // bound a second time, as `FnOnce`, spanned on the attribute.
                quote! {
                    match __output {
                        ::core::result::Result::Ok(__value) => ::core::result::Result::Ok(__value),
                        ::core::result::Result::Err(__error) => {
                            ::core::result::Result::Err(#into_error(__error))
                        }
                    }
                },
            )
        }
        Output::Stream {
            progress,
            output,
            fallible,
        } => {
            // Spanned on the preliminary type: one without `Serialize` is the one error
            // `ToolPreliminary` reports there.
            let finish = respan(
                quote!(#private::finish_stream::<#progress, #output>),
                progress.span(),
            );
            let wrap = match fallible {
                Some(error) => {
                    let into_error = tool_error(&private, error);
                    quote! {
                        match __output {
                            ::core::result::Result::Ok(__stream) => #finish(__stream, #name).await,
                            ::core::result::Result::Err(__error) => {
                                ::core::result::Result::Err(#into_error(__error))
                            }
                        }
                    }
                }
                None => quote!(#finish(__output, #name).await),
            };
            (quote_spanned!(output.span()=> #output), wrap)
        }
        Output::MalformedStream => unreachable!("a malformed stream's tool is a stub"),
    };
    let timeout = tool.attr.timeout_ms.as_ref().map(|ms| {
        quote! {
            const TIMEOUT: ::core::option::Option<::core::time::Duration> =
                ::core::option::Option::Some(::core::time::Duration::from_millis(#ms));
        }
    });

    let retries = tool.attr.retries.as_ref().map(|retries| {
        quote! {
            const RETRIES: ::core::option::Option<usize> = ::core::option::Option::Some(#retries);
        }
    });
    let idempotent = tool.attr.idempotent.map(|_| {
        quote!(
            const IDEMPOTENT: bool = true;
        )
    });
    let needs_approval = tool.attr.needs_approval.as_ref().map(|approval| {
        let decide = match approval {
            Approval::Always => quote!(true),
            // Spanned on the path: a function of the wrong type is reported there.
            Approval::When(path) => quote_spanned!(path.span()=> #path(__args)),
        };
        quote! {
            #[allow(unused_variables)]
            fn needs_approval(&self, __args: &#module::#args_ty) -> bool {
                #decide
            }
        }
    });

    let signature = quote! {
        &self,
        __args: #module::#args_ty,
        __ctx: #krate::ToolContext,
    };
    let future = quote! {
        impl ::core::future::Future<
            Output = ::core::result::Result<#output_ty, #krate::ToolError>,
        > + ::core::marker::Send
    };
    // A plain `fn` (whose output is not a stream, which is awaited) runs on the spot: the
    // engine calls `call_now` without making a future, and `call` is a future of it.
    let call = if tool.is_async || matches!(tool.output, Output::Stream { .. }) {
        quote! {
            #[allow(unused_variables)]
            fn call(#signature) -> #future {
                async move {
                    #run_context
                    let __output = #callee(#(#call_args),*)#awaited;
                    #wrap
                }
            }
        }
    } else {
        quote! {
            const RUNS_NOW: bool = true;

            fn call(#signature) -> #future {
                async move { <Self as #krate::Tool>::call_now(self, __args, __ctx) }
            }

            #[allow(unused_variables)]
            fn call_now(#signature) -> ::core::result::Result<#output_ty, #krate::ToolError> {
                #run_context
                let __output = #callee(#(#call_args),*);
                #wrap
            }
        }
    };

    let impls = quote! {
        #(#param_checks)*

        #field_fns_impl
        #args_traits

        impl #krate::Tool for #module::#tool_ty {
            const NAME: &'static str = #name;
            const DESCRIPTION: &'static str = #description;
            type Args = #module::#args_ty;
            type Output = #output_ty;
            #timeout
            #idempotent
            #retries

            #needs_approval

            fn schema() -> &'static #private::serde_json::Value {
                static SCHEMA: #private::OnceLock<#private::serde_json::Value> = #private::OnceLock::new();
                SCHEMA.get_or_init(#krate::schema_for::<#module::#args_ty>)
            }

            #call
        }

        // The bound (made higher-ranked so it is checked where used, not here) keeps an output
        // type without `Serialize` to the one error `Tool::Output` reports on it.
        impl #krate::ToolInput for #module::#args_ty
        where
            for<'__a> <#module::#tool_ty as #krate::Tool>::Output: #private::serde::Serialize,
        {
            type Output = <#module::#tool_ty as #krate::Tool>::Output;

            fn accepts(tool: &str) -> bool {
                tool == #name
            }

            fn from_args(tool: &str, args: &#krate::AnyValue) -> ::core::option::Option<Self> {
                #private::args_from(tool, #name, args)
            }

            fn into_args(
                self,
                tool: &dyn #krate::DynTool,
            ) -> ::core::result::Result<#krate::AnyValue, ::std::string::String> {
                #private::args_into(self, #name, tool)
            }
        }

        impl #private::AcceptsTool<#module::#tool_ty> for #module::#args_ty {}
    };
    ToolCode { defs, impls }
}
