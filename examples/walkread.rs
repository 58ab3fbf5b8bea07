//! Floors for `scripts/bench`: walk a folder (respecting .gitignore, like ctx) and
//! read every file once (`walkread DIR`), or only `stat` it (`walkread --stat DIR`).
//! Whatever ctx spends beyond the first is parsing and checking; beyond the second,
//! on a warm run, is loading its cache and checking.

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let stat_only = args.first().is_some_and(|a| a == "--stat");
    if stat_only {
        args.remove(0);
    }
    let root = args.first().expect("usage: walkread [--stat] <folder>");
    let mut files = 0usize;
    let mut bytes = 0u64;
    for entry in ignore::WalkBuilder::new(root)
        .git_global(false)
        .build()
        .flatten()
    {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if stat_only {
            if let Ok(m) = std::fs::metadata(entry.path()) {
                files += 1;
                bytes += m.len();
            }
        } else if let Ok(b) = std::fs::read(entry.path()) {
            files += 1;
            bytes += b.len() as u64;
        }
    }
    println!("{files} files, {bytes} bytes");
}
