//! The list contract every list endpoint shares (house style item 16): the query half is
//! [`ListQuery`] (`page` from 1, `size` 1-1000 default 100, `q` a case-insensitive
//! free-text filter), the answer half is [`PageInfo`] (`total`, `page`, `size`)
//! flattened next to the endpoint's own items field (`records`, `hosts`, `leases`, ...),
//! and [`ListQuery::paginate`] pages any iterator in a stable order.
//!
//! Conventions for a list endpoint: take `ApiQuery<ListQuery>` plus, if it has them, a
//! second `ApiQuery` of its field filters (`type`, `subnet`, `mac`, ...); say in its
//! `#[utoipa::path]` doc which fields `q` searches and the order of the items; build the
//! answer with `#[serde(flatten)] paging: PageInfo`. A page past the end is empty (not an
//! error) and still reports `total`. No state.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, Result};

/// Page size when `size` is absent.
pub const DEFAULT_SIZE: usize = 100;
/// Largest accepted `size`.
pub const MAX_SIZE: usize = 1000;

/// Query parameters shared by every list endpoint (`?page=&size=&q=`).
#[derive(Debug, Default, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page number, from 1. Default 1. A page past the end is empty.
    #[param(minimum = 1)]
    pub page: Option<usize>,
    /// Page size, 1-1000. Default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub size: Option<usize>,
    /// Case-insensitive substring filter; the fields it searches are listed per endpoint.
    /// Blank is no filter.
    pub q: Option<String>,
}

/// The paging half of every list answer, flattened next to the items:
/// `{"<items>": [...], "total": 7, "page": 1, "size": 100}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct PageInfo {
    /// Items matching the filters (all pages).
    pub total: usize,
    /// Page number (from 1).
    pub page: usize,
    /// Page size.
    pub size: usize,
}

/// One page of items with its [`PageInfo`], from [`ListQuery::paginate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items of this page, in the list's stable order.
    pub items: Vec<T>,
    /// Total, page and size.
    pub info: PageInfo,
}

impl<T> Page<T> {
    /// The same page with every item converted by `f` (for views of stored values).
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            info: self.info,
        }
    }
}

/// Checks `page`/`size` (page from 1, size 1-[`MAX_SIZE`], defaults 1 and
/// [`DEFAULT_SIZE`]) and returns them.
///
/// # Errors
/// [`ApiError::BadRequest`] naming the parameter.
pub fn paging(page: Option<usize>, size: Option<usize>) -> Result<(usize, usize)> {
    let size = size.unwrap_or(DEFAULT_SIZE);
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(ApiError::BadRequest("'size' must be 1-1000".into()));
    }
    let page = page.unwrap_or(1);
    if page == 0 {
        return Err(ApiError::BadRequest("'page' starts at 1".into()));
    }
    Ok((page, size))
}

impl ListQuery {
    /// `q` trimmed and lower-cased; `None` when absent or blank.
    pub fn needle(&self) -> Option<String> {
        self.q
            .as_deref()
            .map(|q| q.trim().to_lowercase())
            .filter(|q| !q.is_empty())
    }

    /// Pages `items`: sorts them by `key` (a stable sort, so equal keys keep the input
    /// order; the key makes the order independent of how the store iterates), counts
    /// them, and keeps page `page` of `size` items.
    ///
    /// # Errors
    /// A bad `page` or `size` ([`paging`]).
    pub fn paginate<T, K: Ord>(&self, items: impl IntoIterator<Item = T>, key: impl FnMut(&T) -> K) -> Result<Page<T>> {
        let (page, size) = paging(self.page, self.size)?;
        let mut all: Vec<T> = items.into_iter().collect();
        all.sort_by_key(key);
        let total = all.len();
        let items = all
            .into_iter()
            .skip((page - 1).saturating_mul(size))
            .take(size)
            .collect();
        Ok(Page {
            items,
            info: PageInfo { total, page, size },
        })
    }
}

/// True when `needle` (already lower-cased, see [`ListQuery::needle`]) is `None` or a
/// substring of one of `fields` compared case-insensitively.
pub fn matches<'a>(needle: Option<&str>, fields: impl IntoIterator<Item = &'a str>) -> bool {
    needle.is_none_or(|n| fields.into_iter().any(|f| f.to_lowercase().contains(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(page: Option<usize>, size: Option<usize>, text: Option<&str>) -> ListQuery {
        ListQuery {
            page,
            size,
            q: text.map(Into::into),
        }
    }

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        match r.unwrap_err() {
            ApiError::BadRequest(m) => m,
            e => panic!("expected a 400, got {e:?}"),
        }
    }

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(paging(None, None).unwrap(), (1, DEFAULT_SIZE));
        assert_eq!(paging(Some(3), Some(1)).unwrap(), (3, 1));
        assert_eq!(paging(None, Some(MAX_SIZE)).unwrap(), (1, 1000));
        assert_eq!(err(paging(None, Some(0))), "'size' must be 1-1000");
        assert_eq!(err(paging(None, Some(1001))), "'size' must be 1-1000");
        assert_eq!(err(paging(Some(0), None)), "'page' starts at 1");
        assert_eq!(err(q(Some(0), None, None).paginate(0..3, |i| *i)), "'page' starts at 1");
    }

    #[test]
    fn pages_in_key_order_with_total() {
        // Input out of order: the key decides; equal keys keep their input order.
        let items = [(3, "c"), (1, "a"), (2, "b1"), (2, "b2"), (5, "e")];
        let p = q(Some(2), Some(2), None).paginate(items, |(k, _)| *k).unwrap();
        assert_eq!(p.items, [(2, "b2"), (3, "c")]);
        assert_eq!(
            p.info,
            PageInfo {
                total: 5,
                page: 2,
                size: 2
            }
        );
        let last = q(Some(3), Some(2), None).paginate(items, |(k, _)| *k).unwrap();
        assert_eq!(last.items, [(5, "e")]);
        // Descending order through the key.
        let newest = q(None, Some(1), None)
            .paginate(items, |(k, _)| std::cmp::Reverse(*k))
            .unwrap();
        assert_eq!(newest.items, [(5, "e")]);
    }

    #[test]
    fn past_the_end_is_empty_with_total() {
        let p = q(Some(4), Some(2), None).paginate(1..=5, |i| *i).unwrap();
        assert!(p.items.is_empty());
        assert_eq!(
            p.info,
            PageInfo {
                total: 5,
                page: 4,
                size: 2
            }
        );
        // A page number whose offset overflows is just past the end.
        let p = q(Some(usize::MAX), Some(1000), None).paginate(1..=5, |i| *i).unwrap();
        assert!(p.items.is_empty());
        assert_eq!(p.info.total, 5);
        let empty = q(None, None, None).paginate(Vec::<u8>::new(), |i| *i).unwrap();
        assert_eq!((empty.items.len(), empty.info.total), (0, 0));
    }

    #[test]
    fn q_is_trimmed_case_insensitive_and_blank_is_none() {
        assert_eq!(q(None, None, Some("  PxE ")).needle().as_deref(), Some("pxe"));
        assert_eq!(q(None, None, Some("   ")).needle(), None);
        assert_eq!(q(None, None, None).needle(), None);
        assert!(matches(None, ["anything"]));
        assert!(matches(Some("pxe"), ["host", "PXE-Boot"]));
        assert!(!matches(Some("pxe"), ["host", "boot"]));
        assert!(!matches(Some("x"), []));
    }

    #[test]
    fn map_keeps_the_page_info() {
        let p = q(None, Some(2), None)
            .paginate([2, 1, 3], |i| *i)
            .unwrap()
            .map(|i| i * 10);
        assert_eq!(p.items, [10, 20]);
        assert_eq!(p.info.total, 3);
    }
}
