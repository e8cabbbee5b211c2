//! libxml2's tree-repair tables, as the tree builder (`tree.rs`) applies them: which
//! elements a start tag closes (`htmlStartClose`), the end priorities that stop an end
//! tag (`htmlEndPriority`), and the void elements. Names are compared by
//! [`name_key`](super::name_key) (every name in these tables is short, so its key is
//! exact).

use super::name::name_key as key;

pub(super) const NO_CLASS: u8 = u8::MAX;
/// End priorities of the classes (libxml2's `htmlEndPriority`); everything else is 100.
pub(super) const CLASS_PRIORITY: [u16; 7] = [150, 160, 170, 180, 190, 200, 220];

pub(super) const K_HTML: u64 = key("html");
pub(super) const K_HEAD: u64 = key("head");
pub(super) const K_BODY: u64 = key("body");

pub(super) fn class_of(k: u64) -> u8 {
    const DIV: u64 = key("div");
    const TD: u64 = key("td");
    const TH: u64 = key("th");
    const TR: u64 = key("tr");
    const THEAD: u64 = key("thead");
    const TBODY: u64 = key("tbody");
    const TFOOT: u64 = key("tfoot");
    const TABLE: u64 = key("table");
    match k {
        DIV => 0,
        TD | TH => 1,
        TR => 2,
        THEAD | TBODY | TFOOT => 3,
        TABLE => 4,
        K_HEAD | K_BODY => 5,
        K_HTML => 6,
        _ => NO_CLASS,
    }
}

pub(super) fn priority(class: u8) -> u16 {
    CLASS_PRIORITY.get(class as usize).copied().unwrap_or(100)
}

/// [`is_void`] by [`name_key`](super::name_key) (the void names are all short, so
/// their keys are exact).
pub(super) fn is_void_key(k: u64) -> bool {
    const VOID: [u64; 13] = [
        key("area"),
        key("base"),
        key("basefont"),
        key("br"),
        key("col"),
        key("frame"),
        key("hr"),
        key("img"),
        key("input"),
        key("isindex"),
        key("link"),
        key("meta"),
        key("param"),
    ];
    VOID.contains(&k)
}

/// libxml2's void elements.
pub(crate) fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "br"
            | "col"
            | "frame"
            | "hr"
            | "img"
            | "input"
            | "isindex"
            | "link"
            | "meta"
            | "param"
    )
}

/// The elements a start tag `new` closes when one of them is the current element
/// (libxml2's `htmlStartClose`, grouped by the new tag).
#[inline(always)]
pub(super) fn closed_by(new: u64) -> &'static [u64] {
    const N_A: u64 = key("a");
    const N_ABBR: u64 = key("abbr");
    const N_ACRONYM: u64 = key("acronym");
    const N_ADDRESS: u64 = key("address");
    const N_B: u64 = key("b");
    const N_BDO: u64 = key("bdo");
    const N_BIG: u64 = key("big");
    const N_BLOCKQUOTE: u64 = key("blockquote");
    const N_BODY: u64 = key("body");
    const N_BR: u64 = key("br");
    const N_CAPTION: u64 = key("caption");
    const N_CENTER: u64 = key("center");
    const N_CITE: u64 = key("cite");
    const N_CODE: u64 = key("code");
    const N_COL: u64 = key("col");
    const N_COLGROUP: u64 = key("colgroup");
    const N_DD: u64 = key("dd");
    const N_DFN: u64 = key("dfn");
    const N_DIR: u64 = key("dir");
    const N_DIV: u64 = key("div");
    const N_DL: u64 = key("dl");
    const N_DT: u64 = key("dt");
    const N_EM: u64 = key("em");
    const N_FIELDSET: u64 = key("fieldset");
    const N_FONT: u64 = key("font");
    const N_FORM: u64 = key("form");
    const N_FRAMESET: u64 = key("frameset");
    const N_H1: u64 = key("h1");
    const N_H2: u64 = key("h2");
    const N_H3: u64 = key("h3");
    const N_H4: u64 = key("h4");
    const N_H5: u64 = key("h5");
    const N_H6: u64 = key("h6");
    const N_HEAD: u64 = key("head");
    const N_HR: u64 = key("hr");
    const N_I: u64 = key("i");
    const N_IFRAME: u64 = key("iframe");
    const N_IMG: u64 = key("img");
    const N_KBD: u64 = key("kbd");
    const N_LI: u64 = key("li");
    const N_LISTING: u64 = key("listing");
    const N_MAP: u64 = key("map");
    const N_MENU: u64 = key("menu");
    const N_NOSCRIPT: u64 = key("noscript");
    const N_OL: u64 = key("ol");
    const N_OPTGROUP: u64 = key("optgroup");
    const N_OPTION: u64 = key("option");
    const N_P: u64 = key("p");
    const N_PRE: u64 = key("pre");
    const N_Q: u64 = key("q");
    const N_S: u64 = key("s");
    const N_SAMP: u64 = key("samp");
    const N_SMALL: u64 = key("small");
    const N_SPAN: u64 = key("span");
    const N_STRIKE: u64 = key("strike");
    const N_STRONG: u64 = key("strong");
    const N_SUB: u64 = key("sub");
    const N_SUP: u64 = key("sup");
    const N_TABLE: u64 = key("table");
    const N_TBODY: u64 = key("tbody");
    const N_TD: u64 = key("td");
    const N_TFOOT: u64 = key("tfoot");
    const N_TH: u64 = key("th");
    const N_THEAD: u64 = key("thead");
    const N_TITLE: u64 = key("title");
    const N_TR: u64 = key("tr");
    const N_TT: u64 = key("tt");
    const N_U: u64 = key("u");
    const N_UL: u64 = key("ul");
    const N_VAR: u64 = key("var");
    const N_XMP: u64 = key("xmp");
    match new {
        N_A => const { &[key("a"), key("head")] },
        N_ABBR => const { &[key("head")] },
        N_ACRONYM => const { &[key("head")] },
        N_ADDRESS => const { &[key("head"), key("p"), key("ul")] },
        N_B => const { &[key("head")] },
        N_BDO => const { &[key("head")] },
        N_BIG => const { &[key("head")] },
        N_BLOCKQUOTE => const { &[key("head"), key("p")] },
        N_BODY => {
            const {
                &[
                    key("head"),
                    key("link"),
                    key("p"),
                    key("style"),
                    key("title"),
                ]
            }
        }
        N_BR => const { &[key("head")] },
        N_CAPTION => const { &[key("p")] },
        N_CENTER => const { &[key("b"), key("font"), key("head"), key("i"), key("p")] },
        N_CITE => const { &[key("head")] },
        N_CODE => const { &[key("head")] },
        N_COL => const { &[key("caption"), key("col"), key("p")] },
        N_COLGROUP => const { &[key("caption"), key("col"), key("colgroup"), key("p")] },
        N_DD => {
            const {
                &[
                    key("address"),
                    key("dir"),
                    key("dt"),
                    key("head"),
                    key("listing"),
                    key("menu"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_DFN => const { &[key("head")] },
        N_DIR => const { &[key("head"), key("p")] },
        N_DIV => const { &[key("head"), key("p")] },
        N_DL => {
            const {
                &[
                    key("address"),
                    key("dir"),
                    key("dt"),
                    key("head"),
                    key("listing"),
                    key("menu"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_DT => {
            const {
                &[
                    key("address"),
                    key("dd"),
                    key("dir"),
                    key("head"),
                    key("listing"),
                    key("menu"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_EM => const { &[key("head")] },
        N_FIELDSET => {
            const {
                &[
                    key("a"),
                    key("h1"),
                    key("h2"),
                    key("h3"),
                    key("h4"),
                    key("h5"),
                    key("h6"),
                    key("head"),
                    key("legend"),
                    key("listing"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_FONT => const { &[key("head")] },
        N_FORM => {
            const {
                &[
                    key("address"),
                    key("dir"),
                    key("dl"),
                    key("form"),
                    key("h1"),
                    key("h2"),
                    key("h3"),
                    key("h4"),
                    key("h5"),
                    key("h6"),
                    key("head"),
                    key("hr"),
                    key("listing"),
                    key("menu"),
                    key("ol"),
                    key("p"),
                    key("pre"),
                    key("ul"),
                    key("xmp"),
                ]
            }
        }
        N_FRAMESET => {
            const {
                &[
                    key("head"),
                    key("link"),
                    key("p"),
                    key("style"),
                    key("title"),
                ]
            }
        }
        N_H1 => const { &[key("head"), key("p")] },
        N_H2 => const { &[key("head"), key("p")] },
        N_H3 => const { &[key("head"), key("p")] },
        N_H4 => const { &[key("head"), key("p")] },
        N_H5 => const { &[key("head"), key("p")] },
        N_H6 => const { &[key("head"), key("p")] },
        N_HEAD => const { &[key("p")] },
        N_HR => const { &[key("head"), key("p")] },
        N_I => const { &[key("head")] },
        N_IFRAME => const { &[key("head")] },
        N_IMG => const { &[key("head")] },
        N_KBD => const { &[key("head")] },
        N_LI => {
            const {
                &[
                    key("address"),
                    key("dl"),
                    key("h1"),
                    key("h2"),
                    key("h3"),
                    key("h4"),
                    key("h5"),
                    key("h6"),
                    key("head"),
                    key("li"),
                    key("listing"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_LISTING => const { &[key("head"), key("p")] },
        N_MAP => const { &[key("head")] },
        N_MENU => const { &[key("head"), key("p"), key("ul")] },
        N_NOSCRIPT => const { &[key("script")] },
        N_OL => const { &[key("head"), key("p")] },
        N_OPTGROUP => const { &[key("option")] },
        N_OPTION => const { &[key("option")] },
        N_P => {
            const {
                &[
                    key("b"),
                    key("big"),
                    key("h1"),
                    key("h2"),
                    key("h3"),
                    key("h4"),
                    key("h5"),
                    key("h6"),
                    key("head"),
                    key("i"),
                    key("p"),
                    key("s"),
                    key("small"),
                    key("strike"),
                    key("tt"),
                    key("u"),
                ]
            }
        }
        N_PRE => const { &[key("head"), key("p"), key("ul")] },
        N_Q => const { &[key("head")] },
        N_S => const { &[key("head")] },
        N_SAMP => const { &[key("head")] },
        N_SMALL => const { &[key("head")] },
        N_SPAN => const { &[key("head")] },
        N_STRIKE => const { &[key("head")] },
        N_STRONG => const { &[key("head")] },
        N_SUB => const { &[key("head")] },
        N_SUP => const { &[key("head")] },
        N_TABLE => {
            const {
                &[
                    key("a"),
                    key("h1"),
                    key("h2"),
                    key("h3"),
                    key("h4"),
                    key("h5"),
                    key("h6"),
                    key("head"),
                    key("listing"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_TBODY => {
            const {
                &[
                    key("caption"),
                    key("col"),
                    key("colgroup"),
                    key("p"),
                    key("tbody"),
                    key("td"),
                    key("tfoot"),
                    key("th"),
                    key("thead"),
                    key("tr"),
                ]
            }
        }
        N_TD => {
            const {
                &[
                    key("a"),
                    key("b"),
                    key("font"),
                    key("i"),
                    key("p"),
                    key("span"),
                    key("td"),
                    key("th"),
                    key("u"),
                ]
            }
        }
        N_TFOOT => {
            const {
                &[
                    key("caption"),
                    key("col"),
                    key("colgroup"),
                    key("p"),
                    key("tbody"),
                    key("td"),
                    key("th"),
                    key("thead"),
                    key("tr"),
                ]
            }
        }
        N_TH => {
            const {
                &[
                    key("a"),
                    key("b"),
                    key("font"),
                    key("i"),
                    key("p"),
                    key("span"),
                    key("td"),
                    key("th"),
                    key("u"),
                ]
            }
        }
        N_THEAD => const { &[key("caption"), key("col"), key("colgroup")] },
        N_TITLE => const { &[key("p")] },
        N_TR => {
            const {
                &[
                    key("caption"),
                    key("col"),
                    key("colgroup"),
                    key("p"),
                    key("td"),
                    key("th"),
                    key("tr"),
                ]
            }
        }
        N_TT => const { &[key("head")] },
        N_U => const { &[key("head")] },
        N_UL => {
            const {
                &[
                    key("address"),
                    key("dir"),
                    key("head"),
                    key("listing"),
                    key("menu"),
                    key("p"),
                    key("pre"),
                    key("xmp"),
                ]
            }
        }
        N_VAR => const { &[key("head")] },
        N_XMP => const { &[key("head"), key("p")] },
        _ => &[],
    }
}

/// libxml2's boolean attributes (`htmlIsBooleanAttr`): a valueless one takes its own
/// name as value when parsed, and is printed bare.
pub(crate) fn is_boolean_attr(name: &str) -> bool {
    matches!(
        name,
        "checked"
            | "compact"
            | "declare"
            | "defer"
            | "disabled"
            | "ismap"
            | "multiple"
            | "nohref"
            | "noresize"
            | "noshade"
            | "nowrap"
            | "readonly"
            | "selected"
    )
}
