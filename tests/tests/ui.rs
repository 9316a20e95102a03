//! trybuild UI tests of the macros: every diagnostic has a compile-fail case with its `.stderr`
//! snapshot; pass cases show what compiles. Fixtures are registered here by name, and a test
//! fails when a file under `tests/ui` is not registered (or a registered one is missing).

use std::collections::BTreeSet;
use std::path::Path;

const FAIL: &[&str] = &[
    "agent/fail/after_create_takes_new_message.rs",
    "agent/fail/builder_without_targets.rs",
    "agent/fail/cfg_on_method.rs",
    "agent/fail/context_does_not_fit.rs",
    "agent/fail/context_not_a_type.rs",
    "agent/fail/context_param_first_wrong_type.rs",
    "agent/fail/context_param_other_type_same_name.rs",
    "agent/fail/context_param_wrong_type.rs",
    "agent/fail/duplicate_handoff_name.rs",
    "agent/fail/duplicate_tool_method_and_listed.rs",
    "agent/fail/duplicate_tool_name.rs",
    "agent/fail/dynamic_typed_matches_no_tool.rs",
    "agent/fail/empty_handoffs.rs",
    "agent/fail/error_keeps_builder.rs",
    "agent/fail/error_keeps_input_enum.rs",
    "agent/fail/external_tool_renamed.rs",
    "agent/fail/gate_returns_wrong_decision.rs",
    "agent/fail/invalid_regex_keeps_hooks.rs",
    "agent/fail/generic_impl.rs",
    "agent/fail/listed_tools_share_type_name.rs",
    "agent/fail/matcher_matches_no_tool.rs",
    "agent/fail/matcher_names_renamed_tool_function.rs",
    "agent/fail/matcher_tool_not_listed.rs",
    "agent/fail/max_steps_negative.rs",
    "agent/fail/misspelt_option.rs",
    "agent/fail/mut_self_tool.rs",
    "agent/fail/on_struct.rs",
    "agent/fail/on_trait_impl.rs",
    "agent/fail/output_retries_without_output.rs",
    "agent/fail/output_without_schema.rs",
    "agent/fail/prefilter_returns_messages.rs",
    "agent/fail/renamed_crate_without_option.rs",
    "agent/fail/return_type_does_not_fit.rs",
    "agent/fail/several_tools_typed_output.rs",
    "agent/fail/stop_at_tools_not_names.rs",
    "agent/fail/stop_at_tools_with_output.rs",
    "agent/fail/stop_at_unknown_tool.rs",
    "agent/fail/tool_and_hook_on_one_method.rs",
    "agent/fail/tool_context_param_wrong_type.rs",
    "agent/fail/tool_error_not_display.rs",
    "agent/fail/tool_listed_twice.rs",
    "agent/fail/tool_without_attribute.rs",
    "agent/fail/tool_result_hook_returns_option_string.rs",
    "agent/fail/tools_listed_twice.rs",
    "agent/fail/tools_share_type_name.rs",
    "agent/fail/unknown_option.rs",
    "agent/fail/unknown_tool.rs",
    "agent/fail/unqualified_args_type.rs",
    "agent/fail/validate_output_without_output.rs",
    "agent/fail/validate_output_wrong_type.rs",
    "agent/fail/wrong_context_type.rs",
    "agent/fail/wrong_output_type.rs",
    "hook/fail/bad_on_error.rs",
    "hook/fail/builder_hook_takes_no_tool_event.rs",
    "hook/fail/context_alias_of_another_event.rs",
    "hook/fail/context_of_another_event.rs",
    "hook/fail/duplicate_option.rs",
    "hook/fail/dynamic_true_string.rs",
    "hook/fail/error_keeps_hook_set.rs",
    "hook/fail/invalid_regex.rs",
    "hook/fail/matcher_on_turn_event.rs",
    "hook/fail/missing_context.rs",
    "hook/fail/missing_event.rs",
    "hook/fail/misspelt_event.rs",
    "hook/fail/misspelt_option.rs",
    "hook/fail/priority_too_large.rs",
    "hook/fail/timeout_not_a_number.rs",
    "hook/fail/timeout_on_sync_hook.rs",
    "hook/fail/tool_context_shape.rs",
    "hook/fail/unknown_event.rs",
    "hook/fail/unresolved_input_type.rs",
    "hook/fail/unsafe_fn.rs",
    "hook/fail/validate_output_free_function.rs",
    "run_hooks/fail/async_method.rs",
    "run_hooks/fail/generic_method.rs",
    "run_hooks/fail/misspelt_method.rs",
    "run_hooks/fail/mut_self.rs",
    "run_hooks/fail/no_receiver.rs",
    "run_hooks/fail/not_a_method.rs",
    "run_hooks/fail/not_a_run_hook.rs",
    "run_hooks/fail/not_an_impl.rs",
    "run_hooks/fail/on_trait_impl.rs",
    "run_hooks/fail/pub_method.rs",
    "run_hooks/fail/returns_value.rs",
    "run_hooks/fail/too_few_params.rs",
    "run_hooks/fail/too_many_params.rs",
    "run_hooks/fail/unknown_option.rs",
    "run_hooks/fail/wrong_param_type.rs",
    "tool/fail/borrowed_param.rs",
    "tool/fail/async_error_not_display.rs",
    "tool/fail/default_on_context.rs",
    "tool/fail/default_without_value.rs",
    "tool/fail/error_keeps_tool_type.rs",
    "tool/fail/error_not_display.rs",
    "tool/fail/generic.rs",
    "tool/fail/idempotent_with_value.rs",
    "tool/fail/invalid_name.rs",
    "tool/fail/method_without_agent.rs",
    "tool/fail/missing_description.rs",
    "tool/fail/misspelt_option.rs",
    "tool/fail/output_not_serialize.rs",
    "tool/fail/param_not_json_schema.rs",
    "tool/fail/param_only_deserialize_and_schema.rs",
    "tool/fail/param_only_schema.rs",
    "tool/fail/pattern_param.rs",
    "tool/fail/preliminary_not_serialize.rs",
    "tool/fail/stream_as_impl_trait.rs",
    "tool/fail/stream_error_not_display.rs",
    "tool/fail/stream_without_final_type.rs",
    "tool/fail/needs_approval_not_a_function.rs",
    "tool/fail/needs_approval_wrong_predicate.rs",
    "tool/fail/retries_negative.rs",
    "tool/fail/retries_not_a_number.rs",
    "tool/fail/timeout_ms_negative.rs",
    "tool/fail/timeout_ms_not_a_number.rs",
    "tool/fail/timeout_ms_on_sync_fn.rs",
    "tool/fail/timeout_ms_zero.rs",
    "tool/fail/unknown_option.rs",
    "tool/fail/unsafe_fn.rs",
];

const PASS: &[&str] = &[
    "agent/pass/context_and_targets.rs",
    "agent/pass/exhaustive_match.rs",
    "agent/pass/external_and_renamed.rs",
    "agent/pass/message_hooks.rs",
    "agent/pass/renamed_crate_inner_attrs.rs",
    "agent/pass/same_tool_in_two_agents.rs",
    "agent/pass/tool_beside_user_type.rs",
    "agent/pass/validate_output_params.rs",
    "hook/pass/free_hooks.rs",
    "run_hooks/pass/observers.rs",
    "tool/pass/free_tools.rs",
];

fn ui_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/ui"))
}

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    for fixture in FAIL {
        cases.compile_fail(ui_dir().join(fixture));
    }
    for fixture in PASS {
        cases.pass(ui_dir().join(fixture));
    }
}

fn files_under(dir: &Path, root: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("read tests/ui") {
        let path = entry.expect("read tests/ui entry").path();
        if path.is_dir() {
            files_under(&path, root, out);
        } else {
            let relative = path.strip_prefix(root).expect("under tests/ui");
            out.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn every_fixture_is_registered() {
    let mut on_disk = BTreeSet::new();
    files_under(ui_dir(), ui_dir(), &mut on_disk);
    let mut expected = BTreeSet::new();
    for fail in FAIL {
        expected.insert((*fail).to_owned());
        expected.insert(fail.replace(".rs", ".stderr"));
    }
    for pass in PASS {
        expected.insert((*pass).to_owned());
    }
    let unregistered: Vec<_> = on_disk.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&on_disk).collect();
    assert!(
        unregistered.is_empty(),
        "files under tests/ui not registered in tests/ui.rs: {unregistered:?}"
    );
    assert!(
        missing.is_empty(),
        "registered UI fixtures (or their .stderr snapshots) missing: {missing:?}"
    );
}
