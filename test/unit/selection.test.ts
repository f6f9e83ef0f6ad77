import { halResource, link } from '../../src/http/hal';
import { applySelection } from '../../src/http/selection';

/** An order with an author (embeddable on request) and its items (embedded by default). */
function order(resolved: string[] = []) {
  const author = () => {
    resolved.push('author');
    return halResource({ name: 'Ada' }, { self: link('/users/u-ada') });
  };
  const items = () => {
    resolved.push('items');
    return [halResource({ sku: 'W' }, { self: link('/items/i-w') }, { maker: author }, ['maker'])];
  };
  return halResource({ id: 'o-1', status: 'open' }, { self: link('/orders/o-1') }, { author, items }, ['items']);
}

describe('fields and embedded', () => {
  test('with no selection, everything and the default embeds; embedded resources carry their own defaults', () => {
    const out = applySelection(order(), {});
    expect(out).toMatchObject({ id: 'o-1', status: 'open', _links: { self: { href: '/orders/o-1' } } });
    expect(Object.keys(out._embedded ?? {})).toEqual(['items']);
    expect(out._embedded?.items).toEqual([
      {
        _links: { self: { href: '/items/i-w' } },
        sku: 'W',
        _embedded: { maker: expect.objectContaining({ name: 'Ada' }) },
      },
    ]);
  });

  test('embedded replaces the default; a relation is computed only when asked for', () => {
    const resolved: string[] = [];
    const out = applySelection(order(resolved), { embedded: ['author'] });
    expect(Object.keys(out._embedded ?? {})).toEqual(['author']);
    expect(resolved).toEqual(['author']);
  });

  test('an empty embedded list embeds nothing, and _embedded is then absent', () => {
    expect(applySelection(order(), { embedded: [] })._embedded).toBeUndefined();
  });

  test('fields applies after embedding; _links and _embedded are selectable; unknown names are ignored', () => {
    expect(applySelection(order(), { fields: ['status', 'nope'] })).toEqual({ status: 'open' });
    expect(Object.keys(applySelection(order(), { fields: ['_embedded', '_links'] })).sort()).toEqual([
      '_embedded',
      '_links',
    ]);
    expect(applySelection(order(), { fields: [] })).toEqual({});
  });

  test('names like __proto__ or toString find nothing that was not declared', () => {
    const out = applySelection(order(), { embedded: ['__proto__', 'toString', 'constructor'] });
    expect(out._embedded).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});
