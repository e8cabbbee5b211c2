//! The fixture site's login flow, for `FormRequest::from_response` and the cookie
//! middleware: `GET /login` sets a `session` cookie and serves a form whose hidden
//! `csrf_token` is bound to it; `POST /login` (form-encoded `username`, `password`,
//! `csrf_token`) checks the token against the cookie (403 if it does not match) and the
//! password (`secret`; anything else gets the form again with an error), then sets an
//! `auth` cookie and redirects (302) to `/account`; `GET /account` greets the user and
//! lists their favourite quotes, or redirects to `/login` without a valid `auth`.
//!
//! Stateless: the token and the `auth` cookie are keyed hashes of the session id and
//! the user name (a fixture, not security).

use super::reply::{Reply, Req, html, redirect};
use super::site::Site;

/// The password `POST /login` accepts (any user name).
pub const PASSWORD: &str = "secret";

const KEY: &str = "trawl-fixture-login";

fn sign(value: &str) -> String {
    format!(
        "{:016x}",
        crate::util::fx_hash(format!("{KEY}:{value}").as_bytes())
    )
}

fn cookie<'r>(req: &'r Req, name: &str) -> Option<&'r str> {
    req.header("cookie")?
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn with_headers(reply: Reply, extra: Vec<(String, String)>) -> Reply {
    match reply {
        Reply::Full {
            status,
            mut headers,
            body,
            close,
        } => {
            headers.extend(extra);
            Reply::Full {
                status,
                headers,
                body,
                close,
            }
        }
        other => other,
    }
}

fn login_page(token: &str, error: Option<&str>) -> String {
    let error = error.map_or_else(String::new, |e| format!("<p class=\"error\">{e}</p>\n"));
    format!(
        "<!DOCTYPE html>\n<html><head><title>Login</title></head><body>\n<h1>Login</h1>\n{error}\
         <form action=\"/login\" method=\"post\" id=\"login\">\n\
         <input type=\"hidden\" name=\"csrf_token\" value=\"{token}\">\n\
         <label>Username <input type=\"text\" name=\"username\"></label>\n\
         <label>Password <input type=\"password\" name=\"password\"></label>\n\
         <input type=\"submit\" value=\"Login\">\n</form>\n\
         <form action=\"/search\" method=\"get\" id=\"search\"><input name=\"q\"><button>Search</button></form>\n\
         </body></html>\n"
    )
}

/// `/login` and `/account`.
pub(super) fn route(req: &Req, path: &str, site: &Site) -> Option<Reply> {
    match (req.method.as_str(), path) {
        ("GET" | "HEAD", "/login") => {
            let session = format!(
                "{:016x}",
                crate::util::fx_hash(format!("{:?}", std::time::SystemTime::now()).as_bytes())
            );
            Some(with_headers(
                html(200, login_page(&sign(&session), None)),
                vec![("Set-Cookie".into(), format!("session={session}; Path=/"))],
            ))
        }
        ("POST", "/login") => {
            let form: Vec<(String, String)> = url::form_urlencoded::parse(&req.body)
                .into_owned()
                .collect();
            let field = |name: &str| {
                form.iter()
                    .find(|(k, _)| k == name)
                    .map_or("", |(_, v)| v.as_str())
            };
            let Some(session) = cookie(req, "session") else {
                return Some(html(403, "<h1>No session cookie</h1>".into()));
            };
            let token = sign(session);
            if field("csrf_token") != token {
                return Some(html(403, "<h1>Bad CSRF token</h1>".into()));
            }
            let user = field("username");
            if user.is_empty() || field("password") != PASSWORD {
                return Some(html(
                    200,
                    login_page(&token, Some("Invalid username or password")),
                ));
            }
            let user = user.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
            Some(with_headers(
                redirect(302, "/account"),
                vec![(
                    "Set-Cookie".into(),
                    format!("auth={user}.{}; Path=/", sign(&user)),
                )],
            ))
        }
        ("GET" | "HEAD", "/account") => {
            let user = cookie(req, "auth")
                .and_then(|v| v.split_once('.'))
                .filter(|(user, sig)| sign(user) == *sig)
                .map(|(user, _)| user);
            let Some(user) = user else {
                return Some(redirect(302, "/login"));
            };
            let mut body = format!(
                "<!DOCTYPE html>\n<html><head><title>Account</title></head><body>\n\
                 <h1>Welcome, {}</h1>\n<div class=\"favourites\">\n",
                escape(user)
            );
            for q in site.list_quotes(1).into_iter().take(5) {
                body.push_str(&format!(
                    "<div class=\"quote\"><span class=\"text\">{}</span> <small class=\"author\">{}</small></div>\n",
                    escape(&q.text),
                    escape(&q.author)
                ));
            }
            body.push_str("</div>\n<a href=\"/logout\">Logout</a>\n</body></html>\n");
            Some(html(200, body))
        }
        _ => None,
    }
}
