// Lists read in pages (`limit` + `continue`, https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks):
// the agent's cluster-wide lists (the informers' initial lists and relists, the heartbeat's pods)
// hold one page of response text, parsed JSON and client-node's typed copy at a time instead of
// the whole kind's three times over. 500 is client-go's pager default (and kubectl's --chunk-size).
export const LIST_PAGE_SIZE = 500;
/** Bound on the pages of one list (2,000,000 objects): a server that never ends a list fails it. */
const MAX_PAGES = 4_000;

interface Page {
  metadata?: { _continue?: string };
}

/** Asks for page after page (`next` is the previous page's continue token) and hands each to onPage. */
export async function forEachPage<T extends Page>(listPage: (next: string | undefined) => Promise<T>, onPage: (page: T) => void): Promise<void> {
  let next: string | undefined;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await listPage(next);
    onPage(page);
    next = page.metadata?._continue;
    if (!next) return;
  }
  throw new Error(`list did not end within ${MAX_PAGES} pages of ${LIST_PAGE_SIZE}`);
}

/** The continue parameter for the next page, or nothing for the first. */
export const continueFrom = (next: string | undefined): { _continue?: string } => (next ? { _continue: next } : {});
