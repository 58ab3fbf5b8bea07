//! The warm path of a long-running front end, for `scripts/bench`: open a
//! [`LiveRepo`] on a folder (through the parse cache), then time what each request
//! would pay before it starts: `snapshot()` with nothing changed, and with one
//! file edited since the last request. Prints medians of 5 in seconds.
//!
//!     liverefresh DIR FILE      (FILE: a member, relative to DIR, to edit)

use std::time::Instant;

use ctx_core::load::{live::LiveRepo, LoadOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, file) = match args.as_slice() {
        [d, f] => (std::path::PathBuf::from(d), std::path::PathBuf::from(f)),
        _ => panic!("usage: liverefresh DIR FILE"),
    };
    let opts = LoadOptions {
        cache: true,
        ..LoadOptions::default()
    };
    let t = Instant::now();
    // DIR is taken relative to where the benchmark runs, like `ctx -C DIR`.
    let cwd = std::env::current_dir().expect("a working folder");
    let mut live = LiveRepo::open(Some(&dir), &cwd, opts).expect("a repository");
    let open = t.elapsed().as_secs_f64();
    let objects = live.repo().objects.len();
    let time = |live: &mut LiveRepo| {
        let t = Instant::now();
        live.snapshot().expect("refreshes");
        t.elapsed().as_secs_f64()
    };
    // Let the files just read age past the racy margin.
    std::thread::sleep(std::time::Duration::from_millis(300));
    time(&mut live);
    let unchanged: Vec<f64> = (0..5).map(|_| time(&mut live)).collect();
    let path = dir.join(&file);
    let original = std::fs::read(&path).expect("the file to edit");
    let mut changed = Vec::new();
    for i in 0..5 {
        let mut text = original.clone();
        text.extend_from_slice(format!("\nEdit {i}.\n").as_bytes());
        std::fs::write(&path, &text).expect("edit");
        changed.push(time(&mut live));
    }
    std::fs::write(&path, &original).expect("restore");
    println!(
        "{objects} objects | open {open:.2} s | snapshot, nothing changed {:.3} s | snapshot, one file changed {:.3} s",
        median(unchanged),
        median(changed)
    );
}
