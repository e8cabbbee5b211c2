//! The built-in item pipelines that store what items point to: `FilesPipeline` (a
//! file each) and `ImagesPipeline` (images as JPEGs, thumbnails), with their stores
//! and Python's `mimetypes` naming.
//!
//! | file | holds |
//! |---|---|
//! | `mimetypes` (+ the generated `mimetypes_table`) | Python's `guess_type` / `guess_extension`, and the path pieces `file_path` uses |
//! | `store` | `FILES_STORE`: a directory or S3 |
//! | `images` | the image threads: decode, check, convert, thumbnails |
//! | `files` | `FilesPipeline` (and `ImagesPipeline`, the same with images) and its hooks |

pub mod files;
pub mod images;
pub mod mimetypes;
mod mimetypes_table;
pub mod store;

pub use self::files::{DefaultFilesHooks, DefaultImagesHooks, FilesHooks, FilesPipeline};
