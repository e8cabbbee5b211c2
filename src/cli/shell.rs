//! `trawl shell URL` (and a project's `shell`): Scrapy's shell for selectors —
//! download one page through the middlewares, then read expressions from standard
//! input and print what they select, one result per line.
//!
//! A line is `css QUERY`, `xpath QUERY`, `re REGEX` (parsel's `.re()` on the previous
//! selection), or a bare query: XPath when it starts as one (`/`, `(`, `.`, `@`, a
//! function call), CSS otherwise. `status`, `headers`, `url` print the response's;
//! `quit` (or the end of input) leaves. On a terminal, `rustyline` gives line editing
//! and a history kept across sessions (`~/.trawl_shell_history`); on a pipe, standard
//! input is read line by line (`printf 'css title::text\n' | trawl shell URL`).

use std::io::{BufRead, IsTerminal, Write};

use super::args::Args;
use super::fetch::fetch_response;
use super::run::{CliError, logging, one_line};
use crate::crawl::keys;
use crate::crawl::{Request, Response, Selection};

/// `trawl shell --help`.
pub(super) const HELP: &str = "\
Usage: trawl shell URL [-s NAME=VALUE]...

Downloads URL through the middlewares, then reads expressions from standard input and
prints what each selects, one result per line:

  css QUERY      CSS with parsel's ::text and ::attr(name)
  xpath QUERY    XPath 1.0 with parsel's has-class and EXSLT re:/set:
  re REGEX       parsel's .re() on the previous selection
  QUERY          XPath if it starts with / ( . @ or a function call, CSS otherwise
  url | status | headers   the response's
  quit           leave (so does the end of input)
";

/// Is a bare query XPath rather than CSS?
fn looks_like_xpath(q: &str) -> bool {
    q.starts_with(['/', '(', '.', '@', '$'])
        || q.split_once('(').is_some_and(|(f, _)| {
            !f.is_empty()
                && f.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':')
        }) && !q.contains("::")
}

fn print_selection(out: &mut impl Write, sel: &Selection<'_>) -> std::io::Result<()> {
    if sel.is_empty() {
        return writeln!(out, "(nothing)");
    }
    for (i, s) in sel.getall().iter().enumerate() {
        writeln!(out, "[{i}] {s}")?;
    }
    Ok(())
}

/// One line's answer, written to `out`; the selection it made (for `re`).
fn answer<'r>(
    response: &'r Response,
    line: &str,
    last: Option<Selection<'r>>,
    out: &mut impl Write,
) -> std::io::Result<Option<Selection<'r>>> {
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let query = |q: &str, xpath: bool| -> Result<Selection<'r>, String> {
        if xpath {
            response.try_xpath(q, &[]).map_err(|e| e.to_string())
        } else {
            let sel = response.css(q);
            // `css` logs an invalid selector and selects nothing: say so here.
            match crate::html::Selector::parse(q.split("::").next().unwrap_or(q).trim()) {
                Err(e) if !q.trim_start().starts_with("::") => Err(e.to_string()),
                _ => Ok(sel),
            }
        }
    };
    let result = match verb {
        "url" => {
            writeln!(out, "{}", response.url())?;
            return Ok(last);
        }
        "status" => {
            writeln!(out, "{}", response.status())?;
            return Ok(last);
        }
        "headers" => {
            for (n, v) in response.headers().iter() {
                writeln!(
                    out,
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                )?;
            }
            return Ok(last);
        }
        "re" => {
            let Some(sel) = &last else {
                writeln!(out, "error: no selection yet for re")?;
                return Ok(last);
            };
            match sel.re(rest) {
                Ok(found) if found.is_empty() => writeln!(out, "(nothing)")?,
                Ok(found) => {
                    for (i, s) in found.iter().enumerate() {
                        writeln!(out, "[{i}] {s}")?;
                    }
                }
                Err(e) => writeln!(out, "error: {}", one_line(&e.to_string()))?,
            }
            return Ok(last);
        }
        "css" => query(rest, false),
        "xpath" => query(rest, true),
        _ => query(line, looks_like_xpath(line)),
    };
    match result {
        Ok(sel) => {
            print_selection(out, &sel)?;
            Ok(Some(sel))
        }
        Err(e) => {
            writeln!(out, "error: {}", one_line(&e))?;
            Ok(last)
        }
    }
}

/// Runs the shell.
pub(super) fn shell(args: &Args) -> Result<i32, CliError> {
    let url = match args.positional.as_slice() {
        [u] => u,
        [] => return Err(CliError::Usage("shell needs a URL".into())),
        _ => return Err(CliError::Usage("shell takes one URL".into())),
    };
    let request = Request::get(url)
        .map_err(|e| CliError::Usage(format!("invalid URL {url:?}: {e}")))?
        .with_dont_filter(true)
        .with_errback("fetch_failed")
        .with_meta(keys::HANDLE_HTTPSTATUS_ALL, true);
    logging(args, "WARNING")?;
    let response = match fetch_response(args, request, "WARNING")? {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(CliError::Failed(format!("fetch {url} failed: {e}"))),
        None => {
            return Err(CliError::Failed(format!(
                "fetch {url} failed: the request was dropped"
            )));
        }
    };
    if std::io::stdin().is_terminal() {
        return interactive(&response);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let io = |e: std::io::Error| CliError::Failed(format!("writing the output: {e}"));
    let mut last: Option<Selection<'_>> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| CliError::Failed(format!("reading the input: {e}")))?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if matches!(line, "quit" | "exit" | "q") {
            break;
        }
        last = answer(&response, line, last, &mut out).map_err(io)?;
        out.flush().map_err(io)?;
    }
    Ok(0)
}

/// The shell on a terminal: `rustyline` for line editing and history (kept in
/// `~/.trawl_shell_history` when `HOME` is set).
fn interactive(response: &Response) -> Result<i32, CliError> {
    use rustyline::error::ReadlineError;
    let failed = |e: ReadlineError| CliError::Failed(format!("the terminal: {e}"));
    let mut editor = rustyline::DefaultEditor::new().map_err(failed)?;
    let history = std::env::var_os("HOME")
        .map(|home| std::path::PathBuf::from(home).join(".trawl_shell_history"));
    if let Some(h) = &history {
        // No history yet is not an error.
        let _ = editor.load_history(h);
    }
    let stdout = std::io::stdout();
    let io = |e: std::io::Error| CliError::Failed(format!("writing the output: {e}"));
    writeln!(
        stdout.lock(),
        "[trawl] {} {} ({} bytes). Type css QUERY, xpath QUERY, re REGEX, a bare query, or quit.",
        response.status(),
        response.url(),
        response.body().len()
    )
    .map_err(io)?;
    let mut last: Option<Selection<'_>> = None;
    loop {
        let line = match editor.readline(">>> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
            Err(e) => return Err(failed(e)),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        if matches!(line, "quit" | "exit" | "q") {
            break;
        }
        let mut out = stdout.lock();
        last = answer(response, line, last, &mut out).map_err(io)?;
        out.flush().map_err(io)?;
    }
    if let Some(h) = &history
        && let Err(e) = editor.save_history(h)
    {
        log::warn!("could not save the shell history to {}: {e}", h.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Headers;

    #[test]
    fn answers_css_xpath_re_and_errors() {
        let req = Request::get("http://example.com/").expect("url");
        let r = Response::new(
            req,
            200,
            Headers::new(),
            "<title>T 42</title><ul><li class=a>1</li><li>2</li></ul>",
        );
        let mut out = Vec::new();
        let mut last = None;
        for line in [
            "css title::text",
            "re \\d+",
            "//li[has-class('a')]/text()",
            "count(//li)",
            "li::text",
            "xpath //li[",
            "css li[",
            "status",
        ] {
            last = answer(&r, line, last, &mut out).expect("write");
        }
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(
            text,
            "[0] T 42\n[0] 42\n[0] 1\n[0] 2.0\n[0] 1\n[1] 2\n\
             error: XPath error: expected a node test (end of expression) at position 5\n\
             error: Invalid selector \"li[\"\n200\n"
                .replace("Invalid selector \"li[\"", &selector_error("li[")),
        );
    }

    fn selector_error(q: &str) -> String {
        crate::html::Selector::parse(q)
            .map(|_| String::new())
            .unwrap_or_else(|e| one_line(&e.to_string()))
    }
}
