/**
 * An intrusive doubly-linked FIFO: the items carry their own `prev`/`next` links, so push, shift
 * and removal from the middle are O(1) and allocate nothing. The queue machine keeps its ready
 * messages, each owner's unacked messages and the consumers waiting for messages in these.
 *
 * Invariant: an item is in at most one `LinkedQueue` at a time (the links are shared), and its
 * links are both undefined while it is in none. The caller tracks which queue an item is in.
 */
export interface Linked<T> {
  prev: T | undefined;
  next: T | undefined;
}

export class LinkedQueue<T extends Linked<T>> {
  head: T | undefined = undefined;
  tail: T | undefined = undefined;
  length = 0;

  /** Append at the tail. */
  push(item: T): void {
    item.prev = this.tail;
    item.next = undefined;
    if (this.tail === undefined) this.head = item;
    else this.tail.next = item;
    this.tail = item;
    this.length++;
  }

  /** Remove and return the head, or undefined when empty. */
  shift(): T | undefined {
    const item = this.head;
    if (item !== undefined) this.remove(item);
    return item;
  }

  /** Unlink `item`, which must be in this queue. */
  remove(item: T): void {
    const { prev, next } = item;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    item.prev = undefined;
    item.next = undefined;
    this.length--;
  }

  /** Forget every item (their links are left as they are: the caller drops the items). */
  clear(): void {
    this.head = undefined;
    this.tail = undefined;
    this.length = 0;
  }
}
