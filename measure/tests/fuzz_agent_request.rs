//! Fuzz target of the agent's request decoding on the stable toolchain (see
//! `scaletune_space::fuzz`): any body decodes to a `RunRequest` or fails
//! with an error, never a panic; decoding only (the agent is not started).
//! A smoke run under `cargo test`; `make fuzz` runs it for `FUZZ_SECS` seconds.

use proptest::prelude::*;
use scaletune_measure::agent::api::RunRequest;
use scaletune_space::fuzz::{self, int_text, mutate};

/// JSON bodies shaped like a run request, with hostile field values.
fn request_body() -> BoxedStrategy<String> {
    let b64 = prop_oneof![
        Just("f0VMRgIBAQ==".to_string()),
        Just("!!not base64".to_string()),
        Just(String::new()),
        Just("QQ".to_string())
    ];
    let vls = prop::collection::vec(int_text(), 0..6).prop_map(|v| format!("[{}]", v.join(",")));
    let protocol = (int_text(), int_text(), int_text(), int_text(), any::<bool>(), prop::option::of(int_text()), prop::option::of(int_text()))
        .prop_map(|(w, n, r, ms, flush, pin, threads)| {
            let opt = |o: Option<String>| o.unwrap_or_else(|| "null".to_string());
            format!(
                r#"{{"warmup":{w},"number":{n},"repeat":{r},"min_repeat_ms":{ms},"flush_cache":{flush},"pin_core":{},"threads":{}}}"#,
                opt(pin),
                opt(threads)
            )
        });
    let label = prop_oneof![Just("cand 1".to_string()), Just("\u{1b}[31mred\n".to_string()), Just("x".repeat(70_000))];
    (label, b64.clone(), b64, vls, protocol, int_text(), int_text())
        .prop_map(|(label, exe, input, vls, protocol, timeout, queue)| {
            format!(
                r#"{{"label":{label:?},"executable":"{exe}","input":"{input}","vl_bits":{vls},"protocol":{protocol},"timeout_ms":{timeout},"queue_timeout_ms":{queue}}}"#
            )
        })
        .prop_flat_map(|t| prop_oneof![Just(t.clone()), mutate(t)])
        .boxed()
}

#[test]
fn fuzz_agent_request_decoding() {
    fuzz::run("agent request decoding", request_body(), |body| {
        if let Ok(req) = serde_json::from_slice::<RunRequest>(body.as_bytes()) {
            // A decoded request encodes and decodes to the same fields.
            let again: RunRequest =
                serde_json::from_str(&serde_json::to_string(&req).expect("encodes")).expect("decodes");
            prop_assert_eq!(again.executable, req.executable);
            prop_assert_eq!(again.vl_bits, req.vl_bits);
            prop_assert_eq!(again.protocol, req.protocol);
        }
        Ok(())
    });
}
