//! Running a helper program (git) with a deadline and bounded output: the child is
//! killed when it overruns either, so a hostile repository cannot stall a resolve.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a completed run produced.
pub struct Output {
    pub success: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Why a run did not complete.
pub enum Failure {
    Spawn(std::io::Error),
    TimedOut(Duration),
    TooLarge(u64),
}

/// Run `cmd` (stdin closed), keeping at most `max_stdout` bytes of its output.
pub fn run(mut cmd: Command, timeout: Duration, max_stdout: u64) -> Result<Output, Failure> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(Failure::Spawn)?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let overflow = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&overflow);
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.take(max_stdout + 1).read_to_end(&mut buf);
        if buf.len() as u64 > max_stdout {
            flag.store(true, Ordering::SeqCst);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.take(16 * 1024).read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let deadline = Instant::now() + timeout;
    let mut failure = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if overflow.load(Ordering::SeqCst) => {
                failure = Some(Failure::TooLarge(max_stdout));
                break None;
            }
            Ok(None) if Instant::now() >= deadline => {
                failure = Some(Failure::TimedOut(timeout));
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                failure = Some(Failure::Spawn(e));
                break None;
            }
        }
    };
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if let Some(f) = failure {
        return Err(f);
    }
    if stdout.len() as u64 > max_stdout {
        return Err(Failure::TooLarge(max_stdout));
    }
    Ok(Output {
        success: status.is_some_and(|s| s.success()),
        stdout,
        stderr,
    })
}
