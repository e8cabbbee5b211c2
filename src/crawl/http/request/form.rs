//! Scrapy's `FormRequest`: url-encoded form data, in the body of a POST or the query of
//! any other method (byte-identical to Scrapy 2.19's, checked against
//! `tests/data/requests/kinds.json`), and `FormRequest::from_response`: a request that submits an HTML `<form>` of a page,
//! built by Scrapy 2.19's rules — and with Scrapy's own XPath expressions, evaluated
//! by trawl's XPath engine, so the fields are the ones Scrapy sends (checked against
//! `tests/data/requests/from_response.json`, recorded by `gen_from_response.py`).
//!
//! Scrapy 2.19 deprecates `from_response` in favour of the `form2request` library;
//! trawl keeps it, as the tool Scrapy users know (DESIGN.md lists the choice).
//!
//! The rules, in Scrapy's order: the form is chosen by `formname`, then `formid`
//! (either falls through when nothing matches), then `formxpath` / `formcss` (the first
//! match, walked up to its `<form>`; no match is an error), then `formnumber`
//! (negative counts from the end). Its fields are every `<textarea>`, `<select>` and
//! `<input>` but submit, image and reset buttons and unchecked checkboxes and radios —
//! disabled ones too — with a name; then the clicked button (the first submit
//! button, or the one `clickdata` names; none with `dont_click`); then `formdata`,
//! whose keys replace the form's fields (`None` removes one). The method is the form's,
//! anything but GET and POST becoming GET; the action is joined with the page's
//! `<base href>`; the data is encoded with the page's encoding.

use super::error::{KindError, get_encoded};
use super::{Method, Request};
use crate::crawl::http::response::Response;
use crate::html::{ElementRef, XPath, XPathItem, XPathValue};

/// Scrapy's `FormRequest(url, formdata=..., method=..., encoding=...)`: the pairs are
/// url-encoded in the request's encoding (Python's `urlencode`: `quote_plus` of the
/// encoded bytes, `&`-joined; repeat a key for several values). With data and no
/// method, the method is POST; a POST carries them as its body with
/// `Content-Type: application/x-www-form-urlencoded` (unless set), any other method
/// replaces the URL's query with them (the fragment stays). Without data it is a
/// plain request.
///
/// # Examples
///
/// ```
/// use trawl::crawl::FormRequest;
///
/// let r = FormRequest::build("http://example.com/s", &[("q", "a b")], Some("GET"), None).unwrap();
/// assert_eq!(r.url_str(), "http://example.com/s?q=a+b");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FormRequest;

impl FormRequest {
    /// A form submission to `url`; `encoding` is a Python codec name (default UTF-8).
    ///
    /// # Errors
    ///
    /// The URL does not parse; a value the encoding cannot encode; an unknown encoding.
    pub fn build(
        url: &str,
        formdata: &[(&str, &str)],
        method: Option<&str>,
        encoding: Option<&str>,
    ) -> Result<Request, KindError> {
        let codec = match encoding {
            Some(label) => crate::crawl::http::response::resolve_encoding(label.as_bytes())
                .ok_or_else(|| KindError::UnknownEncoding(label.to_owned()))?,
            None => encoding_rs::UTF_8,
        };
        let mut request = get_encoded(url, codec)?;
        if let Some(label) = encoding {
            request = request.with_encoding(label);
        }
        let method = match method {
            Some(m) => m.to_ascii_uppercase(),
            None if !formdata.is_empty() => "POST".to_owned(),
            None => "GET".to_owned(),
        };
        request.set_method(Method::new(&method));
        if formdata.is_empty() {
            return Ok(request);
        }
        let query = crate::crawl::util::canonical::urlencode(formdata, codec)
            .map_err(|reason| KindError::Encode(reason.to_owned()))?;
        if method == "POST" {
            request
                .headers_mut()
                .set_default("Content-Type", "application/x-www-form-urlencoded");
            request.set_body(query.into_bytes());
            return Ok(request);
        }
        // urlunsplit(urlsplit(url)._replace(query=...)), then Scrapy's safe URL.
        let current = request.url_str();
        let (before_fragment, fragment) = current.split_once('#').unwrap_or((current, ""));
        let base = before_fragment
            .split_once('?')
            .map_or(before_fragment, |(b, _)| b);
        let mut replaced = format!("{base}?{query}");
        if !fragment.is_empty() {
            replaced.push('#');
            replaced.push_str(fragment);
        }
        let mut rebuilt = get_encoded(&replaced, codec)?;
        rebuilt.set_method(request.method().clone());
        if let Some(label) = encoding {
            rebuilt = rebuilt.with_encoding(label);
        }
        Ok(rebuilt)
    }
}

/// Scrapy's keyword arguments of `FormRequest.from_response`.
#[derive(Debug, Clone, Default)]
pub struct FormOptions<'a> {
    /// The form whose `name` attribute is this (falls through if none).
    pub formname: Option<&'a str>,
    /// The form whose `id` attribute is this (falls through if none).
    pub formid: Option<&'a str>,
    /// The n-th form (from 0; negative counts from the end). Default 0.
    pub formnumber: isize,
    /// The form containing the first node this XPath selects.
    pub formxpath: Option<&'a str>,
    /// The form containing the first element this CSS selector matches.
    pub formcss: Option<&'a str>,
    /// Fields to set, in order (Scrapy's `formdata` dict: a key given here replaces
    /// the form's fields of that name; `None` only removes them; repeat a key for
    /// several values).
    pub formdata: Vec<(&'a str, Option<&'a str>)>,
    /// Which button to click: attribute/value pairs (`("name", "go")`), or
    /// `("nr", "2")` for the n-th of the form's inputs, selects and textareas.
    pub clickdata: Option<Vec<(&'a str, &'a str)>>,
    /// Submit without clicking any button.
    pub dont_click: bool,
    /// Overrides the form's method (anything but GET and POST becomes GET).
    pub method: Option<&'a str>,
    /// Overrides the form's action (joined with the page's base URL).
    pub url: Option<&'a str>,
}

const INPUTS: &str = "descendant::textarea|descendant::select|descendant::input[not(@type) or @type[ not(re:test(., \"^(?:submit|image|reset)$\", \"i\")) and (../@checked or  not(re:test(., \"^(?:checkbox|radio)$\", \"i\")))]]";

const CLICKABLES: &str = "descendant::input[re:test(@type, \"^(submit|image)$\", \"i\")]|descendant::button[not(@type) or re:test(@type, \"^submit$\", \"i\")]";

fn form_error(message: String) -> KindError {
    KindError::Form(message)
}

/// Evaluates `expr` from `context` and keeps the elements.
fn elements<'d>(context: ElementRef<'d>, expr: &str) -> Result<Vec<ElementRef<'d>>, KindError> {
    let x = XPath::compile(expr).map_err(|e| form_error(format!("{e} in {expr:?}")))?;
    match x.evaluate(context, &[]) {
        Ok(XPathValue::Nodes(items)) => Ok(items
            .into_iter()
            .filter_map(|i| match i {
                XPathItem::Element(e) => Some(e),
                _ => None,
            })
            .collect()),
        Ok(_) => Ok(Vec::new()),
        Err(e) => Err(form_error(format!("{e} in {expr:?}"))),
    }
}

/// Python's `str.strip()` whitespace.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

impl FormRequest {
    /// Scrapy's `FormRequest.from_response(response, ...)`: a request submitting one
    /// of the page's forms.
    ///
    /// # Examples
    ///
    /// ```
    /// use trawl::crawl::{FormOptions, FormRequest, Request, Response};
    /// use trawl::proto::Headers;
    ///
    /// let page = r#"<form action="/login" method="post">
    ///   <input type="hidden" name="csrf" value="t0k">
    ///   <input name="user"><input type="password" name="pass">
    ///   <input type="submit" name="go" value="Log in"></form>"#;
    /// let r = Response::new(Request::get("http://example.com/").unwrap(), 200, Headers::new(), page);
    /// let opts = FormOptions {
    ///     formdata: vec![("user", Some("ann")), ("pass", Some("s3cret"))],
    ///     ..FormOptions::default()
    /// };
    /// let req = FormRequest::from_response(&r, &opts).unwrap();
    /// assert_eq!(req.url_str(), "http://example.com/login");
    /// assert_eq!(req.body(), b"csrf=t0k&go=Log+in&user=ann&pass=s3cret");
    /// ```
    ///
    /// # Errors
    ///
    /// Scrapy's: no form, no form at `formxpath`/`formcss`, `formnumber` out of range,
    /// no (or more than one) element matching `clickdata`, a malformed expression, a
    /// value the page's encoding cannot encode, an action without a scheme.
    pub fn from_response(
        response: &Response,
        opts: &FormOptions<'_>,
    ) -> Result<Request, KindError> {
        let doc = response.document();
        let page = response.scrapy_url();
        let Some(root) = doc.root_element() else {
            return Err(form_error(format!(
                "No <form> element found in <{} {page}>",
                response.status()
            )));
        };
        let form = choose_form(response, root, opts)?;
        let pairs = inputs(form, opts)?;
        let base = response.scrapy_base_url();
        let url = match (opts.url, form.attr("action")) {
            (Some(u), _) => crate::crawl::util::canonical::urljoin(base, u),
            (None, Some(action)) => crate::crawl::util::canonical::urljoin(
                base,
                crate::util::strip_html5_whitespace(action),
            ),
            (None, None) => Ok(base.to_owned()),
        }
        .map_err(|_| KindError::Url(format!("cannot join the form's action with {base:?}")))?;
        let method = opts
            .method
            .map(str::to_owned)
            .or_else(|| form.attr("method").map(str::to_owned))
            .unwrap_or_else(|| "GET".to_owned())
            .to_uppercase();
        let method = if method == "GET" || method == "POST" {
            method
        } else {
            "GET".to_owned()
        };
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        FormRequest::build(
            &url,
            &pairs,
            Some(&method),
            Some(response.encoding().name()),
        )
    }
}

fn choose_form<'d>(
    response: &Response,
    root: ElementRef<'d>,
    opts: &FormOptions<'_>,
) -> Result<ElementRef<'d>, KindError> {
    let forms = elements(root, "//form")?;
    let label = || format!("<{} {}>", response.status(), response.scrapy_url());
    if forms.is_empty() {
        return Err(form_error(format!(
            "No <form> element found in {}",
            label()
        )));
    }
    if let Some(name) = opts.formname
        && let Some(f) = elements(root, &format!("//form[@name=\"{name}\"]"))?.first()
    {
        return Ok(*f);
    }
    if let Some(id) = opts.formid
        && let Some(f) = elements(root, &format!("//form[@id=\"{id}\"]"))?.first()
    {
        return Ok(*f);
    }
    let start = if let Some(css) = opts.formcss {
        let sel = crate::html::Selector::parse(css)
            .map_err(|e| form_error(format!("invalid formcss {css:?}: {e}")))?;
        let first = if root.matches(&sel) {
            Some(root)
        } else {
            root.select(&sel).into_iter().next()
        };
        Some((first, css))
    } else if let Some(expr) = opts.formxpath {
        let x = XPath::compile(expr).map_err(|e| form_error(format!("{e} in {expr:?}")))?;
        let first = match x.evaluate(root, &[]) {
            Ok(XPathValue::Nodes(items)) => match items.into_iter().next() {
                Some(XPathItem::Element(e)) => Some(e),
                Some(other) => {
                    return Err(form_error(format!(
                        "formxpath {expr:?} selects {other:?}, not an element"
                    )));
                }
                None => None,
            },
            Ok(other) => {
                return Err(form_error(format!(
                    "formxpath {expr:?} gives {other:?}, not an element"
                )));
            }
            Err(e) => return Err(form_error(format!("{e} in {expr:?}"))),
        };
        Some((first, expr))
    } else {
        None
    };
    if let Some((first, query)) = start {
        let mut el = first;
        while let Some(e) = el {
            if e.name() == "form" {
                return Ok(e);
            }
            el = e.parent_element();
        }
        return Err(form_error(format!("No <form> element found with {query}")));
    }
    let n = opts.formnumber;
    let index = if n < 0 {
        forms.len().checked_sub(n.unsigned_abs())
    } else {
        Some(n as usize)
    };
    index
        .and_then(|i| forms.get(i).copied())
        .ok_or_else(|| form_error(format!("Form number {n} not found in {}", label())))
}

/// The option's value: its `value` attribute, else its own leading text, stripped.
fn option_value<'d>(o: ElementRef<'d>) -> String {
    if let Some(v) = o.attr("value") {
        return v.to_owned();
    }
    let text = match o.children().next() {
        Some(crate::html::Child::Text(t)) => t,
        _ => "",
    };
    py_strip(text).to_owned()
}

/// The values a field submits (lxml's `.value`, Scrapy's `_value`).
fn field_values(e: ElementRef<'_>) -> Result<Option<Vec<String>>, KindError> {
    match e.name() {
        "textarea" => Ok(Some(vec![e.text_content()])),
        "select" => {
            let options = elements(e, "descendant::option")?;
            if e.attr("multiple").is_some() {
                return Ok(Some(
                    options
                        .iter()
                        .filter(|o| o.attr("selected").is_some())
                        .map(|o| option_value(*o))
                        .collect(),
                ));
            }
            let chosen = options
                .iter()
                .rev()
                .find(|o| o.attr("selected").is_some())
                .or_else(|| options.iter().find(|o| o.attr("disabled").is_none()))
                .or_else(|| options.first());
            Ok(chosen.map(|o| vec![option_value(*o)]))
        }
        _ => {
            let kind = e.attr("type").unwrap_or("text").to_lowercase();
            let value = if kind == "checkbox" || kind == "radio" {
                match e.attr("value") {
                    Some(v) if !v.is_empty() => v.to_owned(),
                    _ => "on".to_owned(),
                }
            } else {
                e.attr("value").unwrap_or("").to_owned()
            };
            Ok(Some(vec![value]))
        }
    }
}

/// The submitted pairs: the form's fields, the clicked button, then `formdata`.
fn inputs(
    form: ElementRef<'_>,
    opts: &FormOptions<'_>,
) -> Result<Vec<(String, String)>, KindError> {
    let keys: Vec<&str> = opts.formdata.iter().map(|(k, _)| *k).collect();
    let mut fields: Vec<(String, String)> = Vec::new();
    for e in elements(form, INPUTS)? {
        let Some(name) = e.attr("name").filter(|n| !n.is_empty()) else {
            continue;
        };
        if keys.contains(&name) {
            continue;
        }
        if let Some(values) = field_values(e)? {
            fields.extend(values.into_iter().map(|v| (name.to_owned(), v)));
        }
    }
    if !opts.dont_click
        && let Some((name, value)) = clickable(form, opts.clickdata.as_deref())?
        && !keys.contains(&name.as_str())
    {
        fields.push((name, value));
    }
    fields.extend(
        opts.formdata
            .iter()
            .filter_map(|(k, v)| v.map(|v| ((*k).to_owned(), v.to_owned()))),
    );
    Ok(fields)
}

/// The clicked button's `(name, value)`, if it has a name (Scrapy's `_get_clickable`).
fn clickable(
    form: ElementRef<'_>,
    clickdata: Option<&[(&str, &str)]>,
) -> Result<Option<(String, String)>, KindError> {
    let clickables = elements(form, CLICKABLES)?;
    let Some(first) = clickables.first() else {
        return Ok(None);
    };
    let pick = |e: ElementRef<'_>| {
        e.attr("name")
            .map(|n| (n.to_owned(), e.attr("value").unwrap_or("").to_owned()))
    };
    let Some(clickdata) = clickdata else {
        return Ok(pick(*first));
    };
    if let Some((_, nr)) = clickdata.iter().find(|(k, _)| *k == "nr") {
        let nr: isize = nr
            .trim()
            .parse()
            .map_err(|_| form_error(format!("clickdata nr must be an integer, got {nr:?}")))?;
        // lxml's `form.inputs`: every select, input and textarea, in document order.
        let all = elements(
            form,
            "descendant::*[self::select or self::input or self::textarea]",
        )?;
        let index = if nr < 0 {
            all.len().checked_sub(nr.unsigned_abs())
        } else {
            Some(nr as usize)
        };
        if let Some(e) = index.and_then(|i| all.get(i)) {
            return Ok(pick(*e));
        }
    }
    let mut expr = String::from(".//*");
    for (k, v) in clickdata {
        expr.push_str(&format!("[@{k}=\"{v}\"]"));
    }
    let found = elements(form, &expr)?;
    match found.as_slice() {
        [one] => Ok(pick(*one)),
        [] => Err(form_error(format!(
            "No clickable element matching clickdata: {clickdata:?}"
        ))),
        many => Err(form_error(format!(
            "Multiple elements found ({many:?}) matching the criteria in clickdata: {clickdata:?}"
        ))),
    }
}
