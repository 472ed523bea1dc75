/** Thrown by store writes that name a row which does not exist (an account, a key). */
export class NotFoundError extends Error {
  override name = "NotFoundError";
}
