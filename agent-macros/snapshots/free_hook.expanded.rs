async fn no_deletes(ctx: &ToolCallContext<Value>) -> ToolCallDecision<Value> {
    ToolCallDecision::block("no")
}
///The `no_deletes` hook, to attach with `#[agent(hooks(no_deletes))]` or `AgentBuilder::hooks`.
#[derive(
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::fmt::Debug,
    ::core::default::Default
)]
struct NoDeletes;
impl ::agent_core::HookSet for NoDeletes {
    fn register(
        self,
        builder: ::agent_core::AgentBuilder,
    ) -> ::agent_core::AgentBuilder {
        builder
            .before_tool_call(
                ::agent_core::Matcher::regex("^rm_").dynamic(),
                ::agent_core::Hook::<
                    ::agent_core::event::BeforeToolCall<_>,
                >::from_async(
                        "no_deletes",
                        move |
                            __ctx: &<::agent_core::event::BeforeToolCall<
                                _,
                            > as ::agent_core::Event>::Ctx|
                        {
                            ::std::boxed::Box::pin(async move {
                                no_deletes(
                                        <::agent_core::event::BeforeToolCall<
                                            _,
                                        > as ::agent_core::__private::ContextIs<
                                            ToolCallContext<_>,
                                        >>::cast(__ctx),
                                    )
                                    .await
                            })
                        },
                    )
                    .priority(-5i32)
                    .on_error(::agent_core::FailurePolicy::FailOpen)
                    .timeout(::core::time::Duration::from_millis(250u64)),
            )
    }
}
