//! Running a granted action as a local command: the handler `exec` hands the
//! session's input to. The command reads the context as JSON on stdin; its stdout
//! is captured (and released by the front end only after the completion receipt
//! is durable); the receipt records a digest of what it produced, never the bytes.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::exchange::canon;
use crate::exchange::consumer::ActionResult;

/// What running the command produced.
pub struct CommandRun {
    /// Success and the digest of stdout plus exit status, for the receipt.
    pub result: ActionResult,
    /// The command's stdout, held back until the receipt is stored.
    pub stdout: Vec<u8>,
    /// Why the command could not be started, if it could not (the receipt then
    /// records a failure with the digest of `{"error": "spawn_failed"}`).
    pub spawn_error: Option<std::io::Error>,
}

/// Run `cmd` (program and arguments) with `input` on stdin. Stderr is inherited
/// so the command's diagnostics reach the user directly.
pub fn run_command(cmd: &[String], input: &Value) -> CommandRun {
    let failed = |what: &str| ActionResult {
        success: false,
        output_digest: canon::digest(&json!({ "error": what })),
    };
    let Some((program, args)) = cmd.split_first() else {
        return CommandRun {
            result: failed("spawn_failed"),
            stdout: Vec::new(),
            spawn_error: Some(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no command given",
            )),
        };
    };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return CommandRun {
                result: failed("spawn_failed"),
                stdout: Vec::new(),
                spawn_error: Some(e),
            }
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        let text = serde_json::to_vec(input).expect("a JSON value serializes");
        // A separate writer, so a command that never reads stdin cannot deadlock us.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&text);
        });
    }
    match child.wait_with_output() {
        Ok(o) => {
            let code = o.status.code().unwrap_or(-1);
            let mut hashed = o.stdout.clone();
            hashed.extend_from_slice(format!("\nexit:{code}").as_bytes());
            CommandRun {
                result: ActionResult {
                    success: o.status.success(),
                    output_digest: canon::digest_bytes(&hashed),
                },
                stdout: o.stdout,
                spawn_error: None,
            }
        }
        Err(_) => CommandRun {
            result: failed("wait_failed"),
            stdout: Vec::new(),
            spawn_error: None,
        },
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn captures_stdout_and_digests_it_with_the_exit_status() {
        let cmd = ["sh".to_string(), "-c".into(), "cat; echo".into()];
        let run = run_command(&cmd, &json!({"a": 1}));
        assert!(run.result.success);
        assert_eq!(run.stdout, b"{\"a\":1}\n");
        assert!(run.spawn_error.is_none());
        let mut hashed = run.stdout.clone();
        hashed.extend_from_slice(b"\nexit:0");
        assert_eq!(run.result.output_digest, canon::digest_bytes(&hashed));
    }

    #[test]
    fn a_failing_command_is_a_failure_with_its_output() {
        let cmd = ["sh".to_string(), "-c".into(), "echo no; exit 3".into()];
        let run = run_command(&cmd, &json!({}));
        assert!(!run.result.success);
        assert_eq!(run.stdout, b"no\n");
    }

    #[test]
    fn a_missing_program_is_a_spawn_failure() {
        let run = run_command(&["/nonexistent/ctx-test-program".to_string()], &json!({}));
        assert!(!run.result.success);
        assert!(run.spawn_error.is_some());
        assert_eq!(
            run.result.output_digest,
            canon::digest(&json!({"error": "spawn_failed"}))
        );
        assert!(run_command(&[], &json!({})).spawn_error.is_some());
    }
}
