//! Child processes of the tests (`trawl crawl` workers).

use std::process::Child;
use std::time::{Duration, Instant};

/// Waits for `child` to exit, at most `secs` (a worker that never stops is a failure,
/// not a hung test run), draining its stderr meanwhile so a chatty worker never blocks
/// on a full pipe. Returns its exit code and its stderr.
pub fn finish(mut child: Child, secs: u64) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let reader = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        })
    });
    let log = |r: Option<std::thread::JoinHandle<String>>| {
        r.map(|r| r.join().unwrap_or_default()).unwrap_or_default()
    };
    let code = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a worker did not stop within {secs} s:\n{}", log(reader));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, log(reader))
}
