// cargo run --release --example login -- [LOGIN_URL] [USER]
//
// A login flow, as a Scrapy user writes one with `FormRequest.from_response`: fetch
// the login page, submit its form with the user name and password filled in (the
// hidden CSRF token and the submit button come from the page), let the cookie
// middleware carry the session, follow the redirect to the account page and scrape
// it. Without a URL it starts the fixture site (its `/login`) on 127.0.0.1 itself.

use serde_json::json;
use trawl::crawl::{
    CallbackResult, FormOptions, FormRequest, Item, Output, Outputs, Priority, Request, Response,
    Settings, Spider, run_spider,
};
use trawl::testing::{FixtureOptions, FixtureServer};

struct Login {
    url: String,
    user: String,
}

fn failure(message: String) -> trawl::defer::Failure {
    trawl::defer::Failure::new(std::io::Error::other(message))
}

impl Spider for Login {
    fn name(&self) -> &str {
        "login"
    }

    fn start(&mut self) -> Outputs {
        let request = Request::get(&self.url).map_err(|e| failure(e.to_string()));
        Box::new(std::iter::once(request.map(Output::Request)))
    }

    // The login page: submit its form (Scrapy: `FormRequest.from_response(response,
    // formdata={"username": ..., "password": ...}, callback=self.after_login)`).
    fn parse(&mut self, response: &Response) -> CallbackResult {
        let opts = FormOptions {
            formid: Some("login"),
            formdata: vec![
                ("username", Some(self.user.as_str())),
                ("password", Some(trawl::testing::login::PASSWORD)),
            ],
            ..FormOptions::default()
        };
        let request = FormRequest::from_response(response, &opts)
            .map_err(|e| failure(format!("cannot submit the login form: {e}")))?;
        Ok(vec![Output::Request(request.with_callback("after_login"))])
    }

    fn callback(&mut self, name: &str, response: &Response) -> CallbackResult {
        match name {
            "after_login" => {
                let Some(greeting) = response.xpath("//h1/text()").get() else {
                    return Err(failure(format!("no greeting at {}", response.url())));
                };
                if !greeting.starts_with("Welcome") {
                    return Err(failure(format!("login failed: {greeting}")));
                }
                Ok(response
                    .xpath("//div[has-class('quote')]")
                    .into_iter()
                    .map(|q| {
                        Output::Item(
                            Item::new()
                                .with("user", self.user.clone())
                                .with("text", q.xpath("./span[@class='text']/text()").get())
                                .with("author", q.css("small.author::text").get()),
                        )
                    })
                    .collect())
            }
            _ => self.parse(response),
        }
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server;
    let url = match args.first() {
        Some(url) => url.clone(),
        None => {
            server = FixtureServer::start(FixtureOptions::default()).expect("fixture server");
            server.url("/login")
        }
    };
    let user = args.get(1).cloned().unwrap_or_else(|| "ann".into());
    let mut settings = Settings::new();
    settings.set(
        "FEEDS",
        json!({ "login.jsonl": {"format": "jsonlines", "overwrite": true} }),
        Priority::Project,
    );
    settings.set("LOG_LEVEL", "INFO", Priority::Project);
    match run_spider(
        Box::new(Login {
            url,
            user: user.clone(),
        }),
        settings,
    ) {
        Ok(crawler) => println!(
            "logged in as {user}: {} favourite quotes from the account page, {} responses",
            crawler.stats.get_int("item_scraped_count"),
            crawler.stats.get_int("response_received_count"),
        ),
        Err(f) => {
            eprintln!("crawl failed: {f}");
            std::process::exit(1);
        }
    }
}
