//! The agent's generated code: its tools, the hook input enums, compile-time checks, and the
//! `AgentSpec` impl that registers everything through the builder.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::check::{Plan, StaticTool};
use super::parse::AgentModel;
use crate::common::{crate_path, is_json_value, last_ident, pascal_case, respan, widest_vis};
use crate::hook::{MatcherCode, registration};
use crate::tool::{ToolOwner, declared_names, tool_code};

/// The agent's code. With `stub`, after an error: its tool types and input enums with
/// placeholder impls, and an `AgentSpec` that registers nothing, so the user's code using them
/// compiles on and the error is the only one reported.
pub(crate) fn expand(model: &AgentModel, plan: &Plan, stub: bool) -> TokenStream {
    let krate = &plan.krate;
    let self_ty = &model.self_ty;
    let shadowed: Vec<syn::Ident> = model.tools.iter().flat_map(declared_names).collect();
    let module = &plan.module;
    let (mut defs, mut impls) = (Vec::new(), Vec::new());
    for tool in &model.tools {
        let code = tool_code(
            tool,
            &ToolOwner::Method(self_ty),
            krate,
            &quote!(#module),
            &shadowed,
            stub,
        );
        defs.push(code.defs);
        impls.push(code.impls);
    }
    let tool_items = (!model.tools.is_empty()).then(|| {
        let vis = widest_vis(model.tools.iter().map(|tool| &tool.vis));
        let doc = format!(
            "The types `#[agent]` generates for the tools of `{}`: each tool's type and its arguments (`ReadFile`, `ReadFileArgs` for `read_file`).",
            quote!(#self_ty).to_string().replace(' ', "")
        );
        quote! {
            #[doc = #doc]
            #vis mod #module {
                #[allow(unused_imports)]
                use super::*;
                #(#defs)*
            }
            #(#impls)*
        }
    });

    let mut enums: Vec<TokenStream> = plan
        .enums
        .iter()
        .map(|def| {
            let tools: Vec<&StaticTool> = def.tools.iter().map(|&i| &plan.tools[i]).collect();
            input_enum(krate, &def.ident, &tools, stub)
        })
        .collect();
    if let Some(ident) = &plan.all_enum {
        let tools: Vec<&StaticTool> = plan.tools.iter().collect();
        enums.push(input_enum(krate, ident, &tools, stub));
    }

    let mut checks = Vec::new();
    for (hook, hook_plan) in model.hooks.iter().zip(&plan.hooks) {
        let Some(input) = &hook.input_ty else {
            continue;
        };
        if hook_plan.generated_enum.is_none() && !is_json_value(input) {
            for &index in &hook_plan.matched {
                let tool_ty = &plan.tools[index].ty;
                checks.push(quote_spanned!(input.span()=> __accepts::<#input, #tool_ty>();));
            }
        }
        if let (Some(output), [index]) = (&hook.output_ty, hook_plan.matched.as_slice())
            && !is_json_value(output)
        {
            let tool_ty = &plan.tools[*index].ty;
            checks.push(respan(
                quote!(__output::<#tool_ty, #output>();),
                output.span(),
            ));
        }
    }
    for tool in &plan.tools {
        let Some(path) = &tool.external else { continue };
        let ty = &tool.ty;
        let name = &tool.name;
        let message = format!(
            "the tool listed as `{}` in `#[agent(tools(...))]` must be named `{name}` (its function's name), because the agent matches hooks against that name",
            quote!(#path).to_string().replace(' ', "")
        );
        checks.push(quote_spanned! {path.span()=>
            const _: () = ::core::assert!(#krate::__private::str_eq(<#ty as #krate::Tool>::NAME, #name), #message);
        });
    }
    let checks = (!checks.is_empty() && !stub).then(|| {
        quote! {
            const _: () = {
                #[allow(dead_code)]
                fn __accepts<I: #krate::__private::AcceptsTool<T>, T: #krate::Tool>() {}
                #[allow(dead_code)]
                fn __output<T: #krate::__private::OutputIs<O>, O>() {}
                #[allow(dead_code)]
                fn __checks() {
                    #(#checks)*
                }
            };
        }
    });

    let name = match &model.attr.name {
        Some(lit) => lit.value(),
        None => last_ident(self_ty)
            .map(ToString::to_string)
            .unwrap_or_else(|| "agent".to_owned()),
    };
    let description = match (&model.attr.description, &model.description) {
        (Some(given), _) => Some(quote!(.description(#given))),
        (None, Some(doc)) => Some(quote!(.description(#doc))),
        (None, None) => None,
    };
    let instructions = model
        .attr
        .instructions
        .as_ref()
        .map(|i| quote!(.instructions(#i)));
    let max_steps = model
        .attr
        .max_steps
        .as_ref()
        .map(|m| quote!(.max_steps(#m)));
    let stop_at_tools = model
        .attr
        .stop_at_tools
        .as_ref()
        .map(|names| quote!(.stop_at_tools([#(#names),*])));
    let tool_registrations = plan.tools.iter().enumerate().map(|(index, tool)| {
        let ty = &tool.ty;
        let value = match model.tools.get(index) {
            Some(method) if method.has_receiver => {
                quote!(#ty(<::std::sync::Arc<_> as ::core::clone::Clone>::clone(&this)))
            }
            _ => quote!(#ty),
        };
        quote!(let builder = builder.tool(#value);)
    });
    let hook_registrations = model
        .hooks
        .iter()
        .zip(&plan.hooks)
        .map(|(hook, hook_plan)| {
            let spec = hook.attr.matcher.as_ref().map(|(spec, _)| spec);
            // A hook that reads the call as JSON can take any tool's: it is not held to the
            // static tools its matcher resolved to.
            let json = hook.input_ty.as_ref().is_some_and(is_json_value)
                && hook.output_ty.as_ref().is_none_or(is_json_value);
            let matcher = match spec {
                _ if !hook.event.tool => None,
                // A dynamic matcher, or a JSON hook's, also matches the tools added at run time:
                // registered as written (every tool, names the agent lacks, a regex), as the
                // builder's is. Each tool is matched once, when it is added, never per call.
                spec if hook.attr.dynamic || json => spec.map(MatcherCode::Runtime),
                _ => Some(MatcherCode::Resolved(
                    hook_plan
                        .matched
                        .iter()
                        .map(|&i| plan.tools[i].name.clone())
                        .collect(),
                )),
            };
            let register = registration(hook, krate, Some(self_ty), matcher.as_ref());
            quote!(let builder = #register;)
        });
    let hook_sets = model.attr.hooks.iter().map(|path| {
        let mut path = path.clone();
        if let Some(last) = path.segments.last_mut() {
            last.ident = syn::Ident::new(&pascal_case(&last.ident.to_string()), last.ident.span());
        }
        quote!(let builder = builder.hooks(#path);)
    });

    let context_type = model
        .attr
        .context
        .as_ref()
        .map(|ty| respan(quote!(.context_type::<#ty>()), ty.span()));
    let output = model.attr.output.as_ref().map(|ty| {
        let output = respan(quote!(.output::<#ty>()), ty.span());
        let retries = model
            .attr
            .output_retries
            .as_ref()
            .map(|n| quote!(.output_retries(#n)));
        quote!(#output #retries)
    });
    if let Some(module) = &plan.targets_module {
        return targets_agent(
            model,
            plan,
            module,
            &name,
            stub,
            quote! {
                let builder = builder #description #instructions #max_steps #stop_at_tools #context_type #output;
                #(#tool_registrations)*
                #(#hook_registrations)*
                #(#hook_sets)*
            },
            quote! {
                #tool_items
                #(#enums)*
                #checks
            },
        );
    }

    if stub {
        let spec = empty_spec(
            krate,
            &TokenStream::new(),
            self_ty,
            &TokenStream::new(),
            &name,
        );
        return quote! {
            #tool_items
            #(#enums)*
            #spec
        };
    }

    quote! {
        #tool_items
        #(#enums)*
        #checks

        impl #krate::AgentSpec for #self_ty {
            const NAME: &'static str = #name;

            fn register(
                this: ::std::sync::Arc<Self>,
                builder: #krate::AgentBuilder,
            ) -> #krate::AgentBuilder {
                let builder = builder #description #instructions #max_steps #stop_at_tools #context_type #output;
                #(#tool_registrations)*
                #(#hook_registrations)*
                #(#hook_sets)*
                let _ = this;
                builder
            }
        }
    }
}

/// The `AgentSpec` of an agent on a generic impl block (an error, already reported): registers
/// nothing, for every parameter choice the trait allows, so `.builder()` compiles on.
pub(crate) fn generic_stub(model: &AgentModel, generics: &syn::Generics) -> TokenStream {
    let krate = crate_path(model.attr.crate_path.as_ref());
    let self_ty = &model.self_ty;
    let name = last_ident(self_ty)
        .map(ToString::to_string)
        .unwrap_or_else(|| "agent".to_owned());
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    let mut where_clause = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    where_clause
        .predicates
        .push(syn::parse_quote!(#self_ty: ::core::marker::Send + ::core::marker::Sync + 'static));
    let impl_generics = quote!(#impl_generics);
    empty_spec(
        &krate,
        &impl_generics,
        self_ty,
        &quote!(#where_clause),
        &name,
    )
}

/// An `AgentSpec` named `name` that registers nothing: what an agent gets after an error, so
/// code calling `.builder()` on it compiles on and the error is the only one.
pub(crate) fn empty_spec(
    krate: &TokenStream,
    impl_generics: &TokenStream,
    self_ty: impl quote::ToTokens,
    where_clause: &TokenStream,
    name: &str,
) -> TokenStream {
    quote! {
        impl #impl_generics #krate::AgentSpec for #self_ty #where_clause {
            const NAME: &'static str = #name;

            fn register(
                _: ::std::sync::Arc<Self>,
                builder: #krate::AgentBuilder,
            ) -> #krate::AgentBuilder {
                builder
            }
        }
    }
}

/// An agent with handoffs or subagents: the module `<agent>_targets` holding `Targets`, one
/// field per target, and `builder_with(targets)` in place of `AgentSpec` (whose `builder()`
/// could not add them). `builder()` and `shared_builder()` are kept as inherent functions whose
/// bound fails with a sentence naming `builder_with`, so calling them is one clear error.
fn targets_agent(
    model: &AgentModel,
    plan: &Plan,
    module: &syn::Ident,
    name: &str,
    stub: bool,
    register: TokenStream,
    items: TokenStream,
) -> TokenStream {
    let krate = &plan.krate;
    let self_ty = &model.self_ty;
    let agent = quote!(#self_ty).to_string().replace(' ', "");
    // After a duplicate name (already reported) each field is declared once.
    let mut seen: Vec<&syn::Ident> = Vec::new();
    let mut fields = Vec::new();
    let mut adds = Vec::new();
    let targets = model
        .attr
        .handoffs
        .iter()
        .map(|name| (name, true))
        .chain(model.attr.subagents.iter().map(|name| (name, false)));
    for (field, handoff) in targets {
        if seen.contains(&field) {
            continue;
        }
        seen.push(field);
        let (ty, method, doc) = if handoff {
            (
                quote!(#krate::Handoff),
                quote!(handoff),
                format!(
                    "The agent `{agent}` may hand a turn to: `Handoff::to(&{field})`, configured as you like."
                ),
            )
        } else {
            (
                quote!(#krate::Subagent),
                quote!(subagent),
                format!(
                    "The agent `{agent}` may call as a tool: `Subagent::of(&{field})`, configured as you like."
                ),
            )
        };
        fields.push(quote! {
            #[doc = #doc]
            pub #field: #ty
        });
        adds.push(quote!(let builder = builder.#method(targets.#field);));
    }
    let module_doc = format!(
        "The targets of `{agent}` (`#[agent(handoffs(...), subagents(...))]`): `Targets`, given to `{agent}::builder_with`."
    );
    let struct_doc = format!(
        "The handoffs and subagents of `{agent}`, one field each: build the agent with `{agent}::builder_with(Targets {{ .. }})`."
    );
    let builder_with_doc = format!(
        "A builder with this agent's tools, hooks and options, and its handoffs and subagents from `targets` (`{module}::Targets`); add a model and build."
    );
    let body = if stub {
        quote!(let _ = (this, targets);)
    } else {
        quote! {
            #register
            #(#adds)*
            let _ = this;
        }
    };
    quote! {
        #items

        #[doc = #module_doc]
        pub mod #module {
            #[doc = #struct_doc]
            pub struct Targets {
                #(#fields,)*
            }
        }

        #[allow(dead_code)]
        impl #self_ty {
            /// The agent's name.
            pub const NAME: &'static str = #name;

            #[doc = #builder_with_doc]
            pub fn builder_with(self, targets: #module::Targets) -> #krate::AgentBuilder {
                Self::shared_builder_with(::std::sync::Arc::new(self), targets)
            }

            /// Like `builder_with`, for state you keep a handle to (to read it after a turn).
            pub fn shared_builder_with(
                this: ::std::sync::Arc<Self>,
                targets: #module::Targets,
            ) -> #krate::AgentBuilder {
                let builder = #krate::AgentBuilder::new(Self::NAME);
                #body
                builder
            }

            /// Not for an agent with handoffs or subagents: use `builder_with`.
            #[doc(hidden)]
            pub fn builder(self) -> #krate::AgentBuilder
            where
                for<'__a> &'__a Self: #krate::__private::BuildWithTargets,
            {
                ::core::unreachable!()
            }

            /// Not for an agent with handoffs or subagents: use `shared_builder_with`.
            #[doc(hidden)]
            pub fn shared_builder(_: ::std::sync::Arc<Self>) -> #krate::AgentBuilder
            where
                for<'__a> &'__a Self: #krate::__private::BuildWithTargets,
            {
                ::core::unreachable!()
            }
        }
    }
}

/// An enum carrying the arguments of exactly `tools`, usable as a hook's input. Its variants
/// hold each tool's args struct by path, which a stub tool (after an error) still declares with
/// its fields; with `stub` the enum's impls are placeholders, since a stub's args struct has
/// none of the traits the real ones need, so a hook matching on it compiles on.
fn input_enum(
    krate: &TokenStream,
    ident: &syn::Ident,
    tools: &[&StaticTool],
    stub: bool,
) -> TokenStream {
    let names: Vec<&String> = tools.iter().map(|t| &t.name).collect();
    let variants: Vec<&syn::Ident> = tools.iter().map(|t| &t.variant).collect();
    let types: Vec<&TokenStream> = tools.iter().map(|t| &t.ty).collect();
    let args: Vec<&TokenStream> = tools.iter().map(|t| &t.args).collect();
    let doc = format!(
        "The input of a hook matching the tools {}: one variant per tool, holding its arguments.",
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let variant_docs = names
        .iter()
        .map(|n| format!("Arguments of the `{n}` tool."));
    // The enum is as visible as the tools it holds, when they agree; private otherwise.
    let vis = match tools.split_first() {
        Some((first, rest)) if rest.iter().all(|t| t.vis == first.vis) => first.vis.clone(),
        _ => syn::Visibility::Inherited,
    };
    let accepts = quote! {
        #(impl #krate::__private::AcceptsTool<#types> for #ident {})*
    };
    if stub {
        let stub_input = crate::common::stub_tool_input(&quote!(#krate), &quote!(#ident));
        return quote! {
            #[doc = #doc]
            #[allow(clippy::enum_variant_names, dead_code, private_interfaces)]
            #vis enum #ident {
                #(
                    #[doc = #variant_docs]
                    #variants(#args),
                )*
            }

            impl ::core::clone::Clone for #ident {
                fn clone(&self) -> Self {
                    ::core::unreachable!()
                }
            }

            #stub_input

            #accepts
        };
    }
    quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone)]
        // A tool named in `tools(...)` is taken as public: one that is private (its arguments
        // type too) must not make the user's `-D warnings` build fail on this generated enum.
        #[allow(clippy::enum_variant_names, private_interfaces)]
        #vis enum #ident {
            #(
                #[doc = #variant_docs]
                #variants(#args),
            )*
        }

        impl #krate::ToolInput for #ident {
            type Output = #krate::__private::serde_json::Value;

            fn accepts(tool: &str) -> bool {
                ::core::matches!(tool, #(#names)|*)
            }

            fn from_args(tool: &str, args: &#krate::AnyValue) -> ::core::option::Option<Self> {
                match tool {
                    #(#names => #krate::__private::args_from(tool, #names, args).map(Self::#variants),)*
                    _ => ::core::option::Option::None,
                }
            }

            fn into_args(
                self,
                tool: &dyn #krate::DynTool,
            ) -> ::core::result::Result<#krate::AnyValue, ::std::string::String> {
                match self {
                    #(Self::#variants(args) => #krate::__private::args_into(args, #names, tool),)*
                }
            }
        }

        #accepts
    }
}
