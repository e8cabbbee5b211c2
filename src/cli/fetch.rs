//! One page through the middlewares, as `scrapy fetch` outside a project: the `fetch`
//! command's and the shell's download.

use std::cell::RefCell;
use std::rc::Rc;

use super::args::Args;
use super::run::{CliError, apply_common, log_level_setting, run_crawl};
use crate::crawl::{
    CallbackResult, Output, Priority, Registry, Request, Response, Settings, Spider,
};
use crate::defer::Failure;

type FetchResult = Rc<RefCell<Option<Result<Response, String>>>>;

struct Fetch {
    request: Option<Request>,
    result: FetchResult,
}

impl Spider for Fetch {
    fn name(&self) -> &str {
        "fetch"
    }
    fn start(&mut self) -> crate::crawl::Outputs {
        crate::crawl::outputs(self.request.take().map(Output::Request))
    }
    fn callback(&mut self, _name: &str, response: &Response) -> CallbackResult {
        *self.result.borrow_mut() = Some(Ok(response.clone()));
        Ok(Vec::new())
    }
    fn errback(&mut self, _name: &str, failure: &Failure, _request: &Request) -> CallbackResult {
        *self.result.borrow_mut() = Some(Err(failure.to_string()));
        Ok(Vec::new())
    }
}

/// Downloads one request through the middlewares as `scrapy fetch` does outside a
/// project (robots.txt not obeyed, no stats dump): the response, the failure, or
/// `None` when a filter dropped the request.
pub(super) fn fetch_response(
    args: &Args,
    request: Request,
    default_level: &str,
) -> Result<Option<Result<Response, String>>, CliError> {
    let mut settings = Settings::new();
    settings.set("ROBOTSTXT_OBEY", false, Priority::Command);
    settings.set("STATS_DUMP", false, Priority::Command);
    log_level_setting(args, default_level, &mut settings);
    apply_common(args, &mut settings)?;
    let result: FetchResult = Rc::default();
    let spider = Fetch {
        request: Some(request),
        result: result.clone(),
    };
    run_crawl(Box::new(spider), settings, Registry::with_builtins(), false)?;
    let outcome = result.borrow_mut().take();
    Ok(outcome)
}
