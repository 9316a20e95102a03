impl Clerk {
    fn non_zero(&self, invoice: &Invoice) -> OutputCheck {
        OutputCheck::Accept
    }
    async fn numbered(
        &self,
        ctx: &OutputContext<Invoice>,
        invoice: &Invoice,
    ) -> OutputCheck {
        OutputCheck::Accept
    }
}
impl ::agent_core::AgentSpec for Clerk {
    const NAME: &'static str = "Clerk";
    fn register(
        this: ::std::sync::Arc<Self>,
        builder: ::agent_core::AgentBuilder,
    ) -> ::agent_core::AgentBuilder {
        let builder = builder.output::<Invoice>().output_retries(2);
        let builder = builder
            .validate_output(
                ::agent_core::Hook::<
                    ::agent_core::event::ValidateOutput<Invoice>,
                >::sync(
                    "non_zero",
                    {
                        let __this = <::std::sync::Arc<
                            _,
                        > as ::core::clone::Clone>::clone(&this);
                        move |
                            __ctx: &<::agent_core::event::ValidateOutput<
                                Invoice,
                            > as ::agent_core::Event>::Ctx|
                        <Clerk>::non_zero(
                            &__this,
                            ::agent_core::__private::answer_as::<
                                Invoice,
                                Invoice,
                            >(&*__ctx.output),
                        )
                    },
                ),
            );
        let builder = builder
            .validate_output(
                ::agent_core::Hook::<
                    ::agent_core::event::ValidateOutput<Invoice>,
                >::from_async(
                        "numbered",
                        {
                            let __this = <::std::sync::Arc<
                                _,
                            > as ::core::clone::Clone>::clone(&this);
                            move |
                                __ctx: &<::agent_core::event::ValidateOutput<
                                    Invoice,
                                > as ::agent_core::Event>::Ctx|
                            {
                                let __this = <::std::sync::Arc<
                                    _,
                                > as ::core::clone::Clone>::clone(&__this);
                                ::std::boxed::Box::pin(async move {
                                    <Clerk>::numbered(
                                            &__this,
                                            <::agent_core::event::ValidateOutput<
                                                Invoice,
                                            > as ::agent_core::__private::ContextIs<
                                                OutputContext<Invoice>,
                                            >>::cast(__ctx),
                                            ::agent_core::__private::answer_as::<
                                                Invoice,
                                                Invoice,
                                            >(&*__ctx.output),
                                        )
                                        .await
                                })
                            }
                        },
                    )
                    .priority(1i32),
            );
        let _ = this;
        builder
    }
}
