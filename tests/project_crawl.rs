//! A project binary's `crawl a b c`: several spiders in one process, each with the
//! project's settings and its own feed (a feed URI shared by several is refused).

use trawl::crawl::Spider;
use trawl::testing::spiders::FixtureSpider;
use trawl::testing::{FixtureOptions, FixtureServer};

#[test]
fn a_project_crawls_several_spiders_in_one_process() {
    let server = FixtureServer::start(FixtureOptions {
        pages: 40,
        ..FixtureOptions::default()
    })
    .expect("fixture");
    let start = server.url("/index.html");
    let (s1, s2) = (start.clone(), start.clone());
    let project = trawl::cli::Project::new("multi")
        .spider("alpha", move |_| {
            Ok(Box::new(FixtureSpider::new(&s1).with_name("alpha")) as Box<dyn Spider>)
        })
        .spider("beta", move |_| {
            Ok(Box::new(FixtureSpider::new(&s2).with_name("beta")) as Box<dyn Spider>)
        })
        .setting("LOGSTATS_INTERVAL", 0);
    let dir = std::env::temp_dir().join(format!("trawl-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let feed = dir.join("%(name)s.jl");
    let argv = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["crawl".into(), "alpha".into(), "beta".into()];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    // One feed file for both would be overwritten: refused as a usage error.
    let shared = dir.join("both.jl");
    assert_eq!(
        project.run(argv(&["-o", shared.to_str().expect("utf-8")])),
        2
    );
    assert_eq!(project.run(argv(&["-O", feed.to_str().expect("utf-8")])), 0);
    let lines = |name: &str| {
        std::fs::read_to_string(dir.join(format!("{name}.jl")))
            .expect("feed")
            .lines()
            .count()
    };
    let (alpha, beta) = (lines("alpha"), lines("beta"));
    assert!(alpha > 0);
    assert_eq!(alpha, beta, "the same site, the same items");
    let _ = std::fs::remove_dir_all(&dir);
}
