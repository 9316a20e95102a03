impl Triage {
    /// The name of the user asking.
    async fn whoami(&self, ctx: ToolContext, user: &User) -> String {
        user.name.clone()
    }
    fn admins_only(&self, ctx: &HandoffContext, user: &User) -> HandoffDecision {
        HandoffDecision::Allow
    }
    async fn started(&self, user: &User, ctx: &SubagentStartContext) {}
}
///The types `#[agent]` generates for the tools of `Triage`: each tool's type and its arguments (`ReadFile`, `ReadFileArgs` for `read_file`).
mod triage_tools {
    #[allow(unused_imports)]
    use super::*;
    ///Arguments of the `whoami` tool.
    #[derive(
        ::agent_core::__private::serde::Deserialize,
        ::agent_core::__private::schemars::JsonSchema
    )]
    #[serde(crate = "::agent_core::__private::serde", deny_unknown_fields)]
    #[schemars(crate = "::agent_core::__private::schemars")]
    pub(super) struct WhoamiArgs {}
    ///The `whoami` tool: The name of the user asking.
    #[derive(::core::clone::Clone)]
    pub(super) struct Whoami(pub ::std::sync::Arc<Triage>);
}
impl ::core::clone::Clone for triage_tools::WhoamiArgs {
    fn clone(&self) -> Self {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        Self {}
    }
}
impl ::core::fmt::Debug for triage_tools::WhoamiArgs {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        f.debug_struct("WhoamiArgs").finish()
    }
}
impl ::agent_core::__private::serde::Serialize for triage_tools::WhoamiArgs {
    fn serialize<S: ::agent_core::__private::serde::Serializer>(
        &self,
        serializer: S,
    ) -> ::core::result::Result<S::Ok, S::Error> {
        use ::agent_core::__private::serde::ser::SerializeStruct as _;
        use ::agent_core::__private::{ParamHasTraits as _, ParamLacksTraits as _};
        let mut __state = serializer.serialize_struct("WhoamiArgs", 0usize)?;
        __state.end()
    }
}
impl ::agent_core::Tool for triage_tools::Whoami {
    const NAME: &'static str = "whoami";
    const DESCRIPTION: &'static str = "The name of the user asking.";
    type Args = triage_tools::WhoamiArgs;
    type Output = String;
    fn schema() -> &'static ::agent_core::__private::serde_json::Value {
        static SCHEMA: ::agent_core::__private::OnceLock<
            ::agent_core::__private::serde_json::Value,
        > = ::agent_core::__private::OnceLock::new();
        SCHEMA.get_or_init(::agent_core::schema_for::<triage_tools::WhoamiArgs>)
    }
    #[allow(unused_variables)]
    fn call(
        &self,
        __args: triage_tools::WhoamiArgs,
        __ctx: ::agent_core::ToolContext,
    ) -> impl ::core::future::Future<
        Output = ::core::result::Result<String, ::agent_core::ToolError>,
    > + ::core::marker::Send {
        async move {
            let __run_context = match ::agent_core::run_context::<User>() {
                ::core::result::Result::Ok(context) => context,
                ::core::result::Result::Err(error) => {
                    return ::core::result::Result::Err(
                        ::agent_core::ToolError::from_display(error),
                    );
                }
            };
            let __output = self.0.whoami(__ctx, &*__run_context).await;
            ::core::result::Result::Ok(__output)
        }
    }
}
impl ::agent_core::ToolInput for triage_tools::WhoamiArgs
where
    for<'__a> <triage_tools::Whoami as ::agent_core::Tool>::Output: ::agent_core::__private::serde::Serialize,
{
    type Output = <triage_tools::Whoami as ::agent_core::Tool>::Output;
    fn accepts(tool: &str) -> bool {
        tool == "whoami"
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        ::agent_core::__private::args_from(tool, "whoami", args)
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        ::agent_core::__private::args_into(self, "whoami", tool)
    }
}
impl ::agent_core::__private::AcceptsTool<triage_tools::Whoami>
for triage_tools::WhoamiArgs {}
///The input of a hook matching the tools `whoami`: one variant per tool, holding its arguments.
#[derive(::core::clone::Clone)]
#[allow(clippy::enum_variant_names, private_interfaces)]
enum TriageInput {
    ///Arguments of the `whoami` tool.
    Whoami(triage_tools::WhoamiArgs),
}
impl ::agent_core::ToolInput for TriageInput {
    type Output = ::agent_core::__private::serde_json::Value;
    fn accepts(tool: &str) -> bool {
        ::core::matches!(tool, "whoami")
    }
    fn from_args(
        tool: &str,
        args: &::agent_core::AnyValue,
    ) -> ::core::option::Option<Self> {
        match tool {
            "whoami" => {
                ::agent_core::__private::args_from(tool, "whoami", args)
                    .map(Self::Whoami)
            }
            _ => ::core::option::Option::None,
        }
    }
    fn into_args(
        self,
        tool: &dyn ::agent_core::DynTool,
    ) -> ::core::result::Result<::agent_core::AnyValue, ::std::string::String> {
        match self {
            Self::Whoami(args) => {
                ::agent_core::__private::args_into(args, "whoami", tool)
            }
        }
    }
}
impl ::agent_core::__private::AcceptsTool<triage_tools::Whoami> for TriageInput {}
///The targets of `Triage` (`#[agent(handoffs(...), subagents(...))]`): `Targets`, given to `Triage::builder_with`.
pub mod triage_targets {
    ///The handoffs and subagents of `Triage`, one field each: build the agent with `Triage::builder_with(Targets { .. })`.
    pub struct Targets {
        ///The agent `Triage` may hand a turn to: `Handoff::to(&billing)`, configured as you like.
        pub billing: ::agent_core::Handoff,
        ///The agent `Triage` may hand a turn to: `Handoff::to(&tech)`, configured as you like.
        pub tech: ::agent_core::Handoff,
        ///The agent `Triage` may call as a tool: `Subagent::of(&ledger)`, configured as you like.
        pub ledger: ::agent_core::Subagent,
    }
}
#[allow(dead_code)]
impl Triage {
    /// The agent's name.
    pub const NAME: &'static str = "triage";
    ///A builder with this agent's tools, hooks and options, and its handoffs and subagents from `targets` (`triage_targets::Targets`); add a model and build.
    pub fn builder_with(
        self,
        targets: triage_targets::Targets,
    ) -> ::agent_core::AgentBuilder {
        Self::shared_builder_with(::std::sync::Arc::new(self), targets)
    }
    /// Like `builder_with`, for state you keep a handle to (to read it after a turn).
    pub fn shared_builder_with(
        this: ::std::sync::Arc<Self>,
        targets: triage_targets::Targets,
    ) -> ::agent_core::AgentBuilder {
        let builder = ::agent_core::AgentBuilder::new(Self::NAME);
        let builder = builder.context_type::<User>();
        let builder = builder
            .tool(
                triage_tools::Whoami(
                    <::std::sync::Arc<_> as ::core::clone::Clone>::clone(&this),
                ),
            );
        let builder = builder
            .hook(
                ::agent_core::Hook::<
                    ::agent_core::event::BeforeHandoff,
                >::sync(
                    "admins_only",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::BeforeHandoff as ::agent_core::Event>::Ctx|
                        match ::agent_core::run_context::<User>() {
                            ::core::result::Result::Ok(__run_context) => {
                                ::core::result::Result::Ok(
                                    <Triage>::admins_only(
                                        &__this,
                                        <::agent_core::event::BeforeHandoff as ::agent_core::__private::ContextIs<
                                            HandoffContext,
                                        >>::cast(__ctx),
                                        &*__run_context,
                                    ),
                                )
                            }
                            ::core::result::Result::Err(error) => {
                                ::core::result::Result::Err(error)
                            }
                        }
                    },
                ),
            );
        let builder = builder
            .hook(
                ::agent_core::Hook::<
                    ::agent_core::event::OnSubagentStart,
                >::from_async(
                    "started",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::OnSubagentStart as ::agent_core::Event>::Ctx|
                        {
                            let __this = <::std::sync::Arc<
                                _,
                            > as ::core::clone::Clone>::clone(&__this);
                            ::std::boxed::Box::pin(async move {
                                match ::agent_core::run_context::<User>() {
                                    ::core::result::Result::Ok(__run_context) => {
                                        ::core::result::Result::Ok(
                                            <Triage>::started(
                                                    &__this,
                                                    &*__run_context,
                                                    <::agent_core::event::OnSubagentStart as ::agent_core::__private::ContextIs<
                                                        SubagentStartContext,
                                                    >>::cast(__ctx),
                                                )
                                                .await,
                                        )
                                    }
                                    ::core::result::Result::Err(error) => {
                                        ::core::result::Result::Err(error)
                                    }
                                }
                            })
                        }
                    },
                ),
            );
        let builder = builder.handoff(targets.billing);
        let builder = builder.handoff(targets.tech);
        let builder = builder.subagent(targets.ledger);
        let _ = this;
        builder
    }
    /// Not for an agent with handoffs or subagents: use `builder_with`.
    #[doc(hidden)]
    pub fn builder(self) -> ::agent_core::AgentBuilder
    where
        for<'__a> &'__a Self: ::agent_core::__private::BuildWithTargets,
    {
        ::core::unreachable!()
    }
    /// Not for an agent with handoffs or subagents: use `shared_builder_with`.
    #[doc(hidden)]
    pub fn shared_builder(_: ::std::sync::Arc<Self>) -> ::agent_core::AgentBuilder
    where
        for<'__a> &'__a Self: ::agent_core::__private::BuildWithTargets,
    {
        ::core::unreachable!()
    }
}
