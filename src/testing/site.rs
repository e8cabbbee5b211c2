//! The fixture site's content: a deterministic set of HTML pages generated on demand
//! from `(seed, page number)`, shaped like the peer benchmark's `gen_site.py` — a title,
//! paragraphs, 3–6 `div.quote` blocks and 10–22 links of mixed forms (relative, `./`,
//! `../`, root-relative, absolute, with fragments, duplicated, and with query strings in
//! two argument orders) — plus a quotes.toscrape-style tutorial section (`/page/N/`
//! lists with `Next` links and `/author/slug/` pages), `robots.txt` and `sitemap.xml`.
//!
//! Nothing is stored: any page renders in a few microseconds from its number.

use std::collections::{BTreeSet, VecDeque};
use std::fmt::Write as _;

const WORDS: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "in",
    "reprehenderit",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
    "crawler",
    "spider",
    "request",
    "response",
    "scheduler",
    "middleware",
    "pipeline",
    "item",
    "selector",
    "reactor",
    "socket",
    "buffer",
    "parser",
    "frontier",
    "politeness",
    "robots",
    "canonical",
    "fingerprint",
];

/// Authors used in quote blocks (and the tutorial's author pages).
pub const AUTHORS: &[&str] = &[
    "Albert Einstein",
    "Jane Austen",
    "Marilyn Monroe",
    "Andre Gide",
    "Thomas A. Edison",
    "Eleanor Roosevelt",
    "Steve Martin",
    "J.K. Rowling",
    "Mark Twain",
    "Dr. Seuss",
    "Douglas Adams",
    "Elie Wiesel",
    "Friedrich Nietzsche",
    "Haruki Murakami",
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
];

const TAGS: &[&str] = &[
    "life",
    "love",
    "humor",
    "inspirational",
    "books",
    "truth",
    "simile",
    "friendship",
    "change",
    "choices",
    "world",
    "thinking",
    "misattributed",
];

/// Quotes per tutorial list page.
pub const QUOTES_PER_LIST_PAGE: usize = 10;

/// SplitMix64: small, fast, good enough for fixture content.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Self {
        let mut r = Self(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The slug of an author's page: lowercase, non-alphanumerics as `-`.
pub fn author_slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_owned()
}

/// One quote block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The quote text (without the curly quotes).
    pub text: String,
    /// The author's name.
    pub author: String,
    /// Tags.
    pub tags: Vec<String>,
}

/// A link as written in a page: the `href` text and the page number it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The `href` attribute, exactly as in the HTML (entities not decoded).
    pub href: String,
    /// The target page number.
    pub target: usize,
}

/// The generated site: `pages` pages, deterministic for a given `(pages, seed, base)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Number of generated pages.
    pub pages: usize,
    /// Content seed.
    pub seed: u64,
    /// `scheme://host:port` used in absolute links.
    pub base: String,
}

impl Site {
    /// A site of `pages` pages (at least 2) with the default seed.
    pub fn new(pages: usize, base: impl Into<String>) -> Self {
        Self {
            pages: pages.max(2),
            seed: 12345,
            base: base.into().trim_end_matches('/').to_owned(),
        }
    }

    /// The path of page `i`: `/s/BBB/IIIII.html` with bucket `BBB = i / 100`.
    pub fn page_path(i: usize) -> String {
        format!("/s/{:03}/{:05}.html", i / 100, i)
    }

    /// The page number for a path, if it is a page of this site.
    pub fn page_number(&self, path: &str) -> Option<usize> {
        let rest = path.strip_prefix("/s/")?;
        let (bucket, file) = rest.split_once('/')?;
        let num = file.strip_suffix(".html")?;
        if bucket.len() != 3 || num.len() != 5 {
            return None;
        }
        let i: usize = num.parse().ok()?;
        (bucket.parse::<usize>().ok()? == i / 100 && i < self.pages).then_some(i)
    }

    /// Whether page `i` is also linked with query strings.
    pub fn is_query_page(i: usize) -> bool {
        i.is_multiple_of(100)
    }

    fn sentence(rng: &mut Rng, lo: usize, hi: usize, out: &mut String) {
        let n = rng.range(lo, hi);
        for k in 0..n {
            let w = rng.pick(WORDS);
            if k == 0 {
                let mut cs = w.chars();
                if let Some(c) = cs.next() {
                    out.push(c.to_ascii_uppercase());
                    out.push_str(cs.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(w);
            }
        }
        out.push('.');
    }

    fn link_href(&self, rng: &mut Rng, src: usize, dst: usize) -> String {
        let (sb, db) = (src / 100, dst / 100);
        let mut forms: Vec<u8> = vec![0, 1, 2, 3];
        if sb == db {
            forms.extend([4, 5]);
        }
        if Self::is_query_page(dst) {
            forms.extend([6, 7]);
        }
        match forms[rng.range(0, forms.len() - 1)] {
            0 => Self::page_path(dst),
            1 => format!("{}{}", self.base, Self::page_path(dst)),
            2 => format!("../{db:03}/{dst:05}.html"),
            3 => format!("{}#q{}", Self::page_path(dst), rng.range(0, 5)),
            4 => format!("{dst:05}.html"),
            5 => format!("./{dst:05}.html"),
            6 => format!("{}?b=2&amp;a=1", Self::page_path(dst)),
            _ => format!("{}?a=1&amp;b=2", Self::page_path(dst)),
        }
    }

    /// The quotes and links of page `i`, as rendered.
    pub fn page_parts(&self, i: usize) -> (Vec<Quote>, Vec<Link>) {
        let mut quotes = Vec::new();
        let mut links = Vec::new();
        self.render_into(i, &mut String::new(), Some((&mut quotes, &mut links)));
        (quotes, links)
    }

    /// The HTML of page `i`.
    pub fn render_page(&self, i: usize) -> String {
        let mut out = String::with_capacity(6 * 1024);
        self.render_into(i, &mut out, None);
        out
    }

    fn render_into(
        &self,
        i: usize,
        out: &mut String,
        mut parts: Option<(&mut Vec<Quote>, &mut Vec<Link>)>,
    ) {
        let n = self.pages;
        let mut rng = Rng::new(self.seed, i as u64);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Fixture page {i}</title>\n</head>\n<body>\n\
             <div class=\"header\"><a href=\"/index.html\">Home</a> | <span class=\"crumb\">bucket {:03}</span></div>\n<h1>",
            i / 100
        );
        Self::sentence(&mut rng, 3, 7, out);
        out.push_str("</h1>\n");
        for _ in 0..rng.range(4, 7) {
            out.push_str("<p>");
            for k in 0..rng.range(3, 6) {
                if k > 0 {
                    out.push(' ');
                }
                Self::sentence(&mut rng, 8, 18, out);
            }
            out.push_str("</p>\n");
        }
        for k in 0..rng.range(3, 6) {
            let mut text = String::new();
            Self::sentence(&mut rng, 10, 24, &mut text);
            let author = rng.pick(AUTHORS);
            let mut tags: Vec<&str> = Vec::new();
            for _ in 0..rng.range(1, 3) {
                let t = rng.pick(TAGS);
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
            let _ = write!(
                out,
                "<div class=\"quote\" id=\"q{k}\"><span class=\"text\">&#8220;{text}&#8221;</span>\n\
                 <span>by <small class=\"author\">{author}</small></span>\n<div class=\"tags\">Tags:"
            );
            for t in &tags {
                let _ = write!(out, " <span class=\"tag\">{t}</span>");
            }
            out.push_str("</div></div>\n");
            if let Some((quotes, _)) = parts.as_mut() {
                quotes.push(Quote {
                    text,
                    author: author.to_owned(),
                    tags: tags.iter().map(|t| (*t).to_owned()).collect(),
                });
            }
        }
        let mut targets = vec![(i + 1) % n];
        for _ in 0..rng.range(9, 19) {
            let t = if rng.unit() < 0.35 {
                (i as i64 + rng.range(0, 300) as i64 - 150).rem_euclid(n as i64) as usize
            } else {
                rng.range(0, n - 1)
            };
            targets.push(t);
        }
        for _ in 0..rng.range(1, 3) {
            let t = targets[rng.range(0, targets.len() - 1)];
            targets.push(t);
        }
        out.push_str("<ul class=\"links\">\n");
        for t in targets {
            let href = self.link_href(&mut rng, i, t);
            let _ = writeln!(out, "<li><a href=\"{href}\">page {t}</a></li>");
            if let Some((_, links)) = parts.as_mut() {
                links.push(Link { href, target: t });
            }
        }
        out.push_str("</ul>\n<p class=\"footer\">");
        Self::sentence(&mut rng, 6, 12, out);
        out.push_str("</p>\n</body>\n</html>\n");
    }

    /// The pages `/index.html` links to.
    pub fn index_targets(&self) -> Vec<usize> {
        let set: BTreeSet<usize> = std::iter::once(0)
            .chain((0..20).map(|k| k * self.pages / 20))
            .collect();
        set.into_iter().collect()
    }

    /// The HTML of `/index.html`.
    pub fn render_index(&self) -> String {
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Fixture index</title>\n</head>\n<body>\n\
             <h1>Fixture site ({} pages)</h1>\n<ul>\n",
            self.pages
        );
        for t in self.index_targets() {
            let _ = writeln!(
                out,
                "<li><a href=\"{}\">page {t}</a></li>",
                Self::page_path(t)
            );
        }
        out.push_str("</ul>\n</body>\n</html>\n");
        out
    }

    /// `robots.txt`: everything allowed except `/private/`, with the sitemap.
    pub fn robots(&self) -> String {
        format!(
            "User-agent: *\nDisallow: /private/\nAllow: /\n\nSitemap: {}/sitemap.xml\n",
            self.base
        )
    }

    /// `sitemap.xml` listing every page.
    pub fn sitemap(&self) -> String {
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for i in 0..self.pages {
            let _ = writeln!(
                out,
                "<url><loc>{}{}</loc></url>",
                self.base,
                Self::page_path(i)
            );
        }
        out.push_str("</urlset>\n");
        out
    }

    /// The crawl a Scrapy-style spider makes from `/index.html` following every link
    /// of the generated pages (query arguments sorted, fragments dropped): the set of
    /// URL paths (with canonical query) and the number of quote items it yields.
    pub fn expected_crawl(&self) -> (BTreeSet<String>, usize) {
        let mut seen = BTreeSet::new();
        let mut items = 0;
        let mut queue = VecDeque::new();
        for t in self.index_targets() {
            queue.push_back((t, false));
        }
        seen.insert("/index.html".to_owned());
        while let Some((page, query)) = queue.pop_front() {
            let key = if query {
                format!("{}?a=1&b=2", Self::page_path(page))
            } else {
                Self::page_path(page)
            };
            if !seen.insert(key) {
                continue;
            }
            let (quotes, links) = self.page_parts(page);
            items += quotes.len();
            for link in links {
                let q = link.href.contains('?');
                queue.push_back((link.target, q));
            }
        }
        (seen, items)
    }

    // ---- the quotes tutorial section -------------------------------------------------

    /// How many `/page/N/` list pages there are (100 quotes, 10 per page).
    pub fn quote_list_pages(&self) -> usize {
        10
    }

    /// The quotes on tutorial list page `n` (1-based).
    pub fn list_quotes(&self, n: usize) -> Vec<Quote> {
        let mut rng = Rng::new(self.seed ^ 0xA5A5, n as u64);
        (0..QUOTES_PER_LIST_PAGE)
            .map(|_| {
                let mut text = String::new();
                Self::sentence(&mut rng, 8, 20, &mut text);
                let author = rng.pick(AUTHORS).to_owned();
                let tags = (0..rng.range(1, 3))
                    .map(|_| rng.pick(TAGS).to_owned())
                    .collect();
                Quote { text, author, tags }
            })
            .collect()
    }

    /// Every quote of the tutorial list pages as a CSV feed (`/feeds/quotes.csv`):
    /// `text,author,tags` with the tags joined by `;`, fields quoted as Python's
    /// `csv` writer quotes them (a comma, a quote or a line break inside), CR LF line
    /// ends.
    pub fn quotes_csv(&self) -> String {
        fn field(out: &mut String, value: &str) {
            if value.contains([',', '"', '\r', '\n']) {
                out.push('"');
                out.push_str(&value.replace('"', "\"\""));
                out.push('"');
            } else {
                out.push_str(value);
            }
        }
        let mut out = String::from("text,author,tags\r\n");
        for n in 1..=self.quote_list_pages() {
            for q in self.list_quotes(n) {
                field(
                    &mut out,
                    &format!("\u{201c}{}\u{201d}, \"she said\"", q.text),
                );
                out.push(',');
                field(&mut out, &q.author);
                out.push(',');
                field(&mut out, &q.tags.join(";"));
                out.push_str("\r\n");
            }
        }
        out
    }

    /// Every quote of the tutorial list pages as an RSS 2.0 feed (`/feeds/quotes.rss`):
    /// an `<item>` per quote with its `title`, `dc:creator` (the author),
    /// `content:encoded` (the text in CDATA) and a `category` per tag.
    pub fn quotes_rss(&self) -> String {
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" \
             xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" \
             xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n<channel>\n<title>Quotes</title>\n",
        );
        for n in 1..=self.quote_list_pages() {
            for (i, q) in self.list_quotes(n).into_iter().enumerate() {
                out.push_str(&format!(
                    "<item>\n<title>Quote {n}.{i}</title>\n<link>{}/page/{n}/#{i}</link>\n\
                     <dc:creator>{}</dc:creator>\n<content:encoded><![CDATA[<p>{}</p>]]></content:encoded>\n",
                    self.base,
                    xml_escape(&q.author),
                    q.text.replace("]]>", "]]]]><![CDATA[>"),
                ));
                for tag in &q.tags {
                    out.push_str(&format!("<category>{}</category>\n", xml_escape(tag)));
                }
                out.push_str("</item>\n");
            }
        }
        out.push_str("</channel>\n</rss>\n");
        out
    }

    /// The same quotes as an Atom feed (`/feeds/quotes.atom`): a default namespace, an
    /// `<entry>` per quote with `title`, `author/name` and a `link href`.
    pub fn quotes_atom(&self) -> String {
        let mut out = String::from(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n<title>Quotes</title>\n",
        );
        for n in 1..=self.quote_list_pages() {
            for (i, q) in self.list_quotes(n).into_iter().enumerate() {
                out.push_str(&format!(
                    "<entry>\n<title>{}</title>\n<author><name>{}</name></author>\n<link href=\"{}/page/{n}/#{i}\"/>\n</entry>\n",
                    xml_escape(&q.text),
                    xml_escape(&q.author),
                    self.base,
                ));
            }
        }
        out.push_str("</feed>\n");
        out
    }

    /// A product feed in Google Merchant's shape (`/feeds/products.xml`): a
    /// `<product>` per author with an `id`, a `g:id` attribute and `g:`-namespaced
    /// `price` and `availability`, like the sitemap-like feeds shops publish.
    pub fn products_xml(&self) -> String {
        let mut out = String::from(
            "<?xml version=\"1.0\"?>\n<catalog xmlns:g=\"http://base.google.com/ns/1.0\">\n",
        );
        let mut authors: Vec<String> = (1..=self.quote_list_pages())
            .flat_map(|n| self.list_quotes(n))
            .map(|q| q.author)
            .collect();
        authors.sort();
        authors.dedup();
        for (i, a) in authors.iter().enumerate() {
            out.push_str(&format!(
                "  <product id=\"p{i}\" g:id=\"G-{i}\">\n    <name>{}</name>\n    \
                 <g:price>{}.{:02} EUR</g:price>\n    <g:availability>{}</g:availability>\n    \
                 <link>{}/author/{}</link>\n  </product>\n",
                xml_escape(a),
                5 + i * 3,
                (i * 37) % 100,
                if i % 4 == 3 {
                    "out of stock"
                } else {
                    "in stock"
                },
                self.base,
                author_slug(a),
            ));
        }
        out.push_str("</catalog>\n");
        out
    }

    /// The HTML of tutorial list page `n`, or `None` past the last.
    pub fn render_list_page(&self, n: usize) -> Option<String> {
        if n == 0 || n > self.quote_list_pages() {
            return None;
        }
        let mut out = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Quotes to Scrape</title>\n</head>\n<body>\n\
             <div class=\"container\"><h1><a href=\"/page/1/\">Quotes to Scrape</a></h1>\n",
        );
        for q in self.list_quotes(n) {
            let slug = author_slug(&q.author);
            let _ = write!(
                out,
                "<div class=\"quote\"><span class=\"text\">&#8220;{}&#8221;</span>\n<span>by <small class=\"author\">{}</small>\n\
                 <a href=\"/author/{slug}/\">(about)</a></span>\n<div class=\"tags\">Tags:",
                q.text, q.author
            );
            for t in &q.tags {
                let _ = write!(out, " <a class=\"tag\" href=\"/tag/{t}/\">{t}</a>");
            }
            out.push_str("</div></div>\n");
        }
        out.push_str("<nav><ul class=\"pager\">\n");
        if n > 1 {
            let _ = writeln!(
                out,
                "<li class=\"previous\"><a href=\"/page/{}/\">&larr; Previous</a></li>",
                n - 1
            );
        }
        if n < self.quote_list_pages() {
            let _ = writeln!(
                out,
                "<li class=\"next\"><a href=\"/page/{}/\">Next &rarr;</a></li>",
                n + 1
            );
        }
        out.push_str("</ul></nav></div>\n</body>\n</html>\n");
        Some(out)
    }

    /// An author's name and birth date (`"January 3, 1814"`), or `None` for an unknown
    /// slug: what the author page shows and `/api/authors/SLUG` answers.
    pub fn author_details(&self, slug: &str) -> Option<(&'static str, String)> {
        let index = AUTHORS.iter().position(|a| author_slug(a) == slug)?;
        let born = 1800 + (index * 7) % 180;
        Some((
            AUTHORS[index],
            format!("January {}, {born}", 1 + index % 28),
        ))
    }

    /// The HTML of an author page, or `None` for an unknown slug.
    pub fn render_author(&self, slug: &str) -> Option<String> {
        let (name, born) = self.author_details(slug)?;
        Some(format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{name}</title>\n</head>\n<body>\n\
             <div class=\"author-details\"><h3 class=\"author-title\">{name}</h3>\n\
             <p><strong>Born:</strong> <span class=\"author-born-date\">{born}</span>\n\
             <span class=\"author-born-location\">in Fixtureville</span></p>\n\
             <div class=\"author-description\">{name} wrote many quotes used by trawl's tests.</div></div>\n</body>\n</html>\n"
        ))
    }
}

/// `<`, `>`, `&` escaped for XML text.
fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_deterministic_and_sized_like_the_bench_fixture() {
        let site = Site::new(2000, "http://127.0.0.1:1");
        assert_eq!(site.render_page(7), site.render_page(7));
        assert_ne!(site.render_page(7), site.render_page(8));
        let sizes: Vec<usize> = (0..200).map(|i| site.render_page(i).len()).collect();
        let mean = sizes.iter().sum::<usize>() / sizes.len();
        assert!((3000..8000).contains(&mean), "mean page size {mean}");
        let (quotes, links) = site.page_parts(7);
        assert!((3..=6).contains(&quotes.len()));
        assert!(links.len() >= 11);
        assert_eq!(links[0].target, 8);
    }

    #[test]
    fn page_numbers_roundtrip() {
        let site = Site::new(500, "http://h");
        assert_eq!(site.page_number(&Site::page_path(123)), Some(123));
        assert_eq!(site.page_number("/s/001/00123.html"), Some(123));
        assert_eq!(site.page_number("/s/002/00123.html"), None);
        assert_eq!(site.page_number("/s/005/00500.html"), None);
    }

    #[test]
    fn every_page_is_reachable() {
        let site = Site::new(300, "http://h");
        let (urls, items) = site.expected_crawl();
        for i in 0..300 {
            assert!(urls.contains(&Site::page_path(i)), "page {i}");
        }
        assert!(items > 300 * 3);
    }

    #[test]
    fn tutorial_pages() {
        let site = Site::new(10, "http://h");
        assert!(site.render_list_page(1).unwrap().contains("class=\"next\""));
        assert!(
            !site
                .render_list_page(10)
                .unwrap()
                .contains("class=\"next\"")
        );
        assert!(site.render_list_page(11).is_none());
        assert_eq!(author_slug("J.K. Rowling"), "j-k-rowling");
        assert!(
            site.render_author("j-k-rowling")
                .unwrap()
                .contains("J.K. Rowling")
        );
    }
}
