// How the website reads a form body: UTF-8 text without control characters, or nothing.
import { describe, expect, it } from 'vitest';
import { FormTextError, parseForm } from '../../../../api-server/website/site.ts';

describe('parseForm', () => {
  it('reads what browsers send: UTF-8, percent-encoded, + for spaces, repeated fields as lists', () => {
    expect({ ...parseForm('_csrf=a-b_c&email=caf%C3%A9%40example.org&password=two+words%2B&next=') }).toEqual({
      _csrf: 'a-b_c',
      email: 'café@example.org',
      password: 'two words+',
      next: '',
    });
    expect({ ...parseForm('name=%F0%9F%9A%80&name=x&name=y') }).toEqual({ name: ['🚀', 'x', 'y'] });
    expect({ ...parseForm('') }).toEqual({});
    // Field names are data, not properties of the object.
    expect(Object.getPrototypeOf(parseForm('__proto__=x'))).toBeNull();
  });

  it('refuses, whole, a body that is not UTF-8 or holds control characters', () => {
    for (const body of ['email=caf%E9', 'email=x%ED%A0%80', 'email=100%', 'email=%', 'email=caf\ufffd', 'email=a%00b', 'a=b%0D%0ABcc%3A+x', 'n%1Bame=x', 'a=%7F', 'a=%C2%85', 'a=b\nc']) {
      expect(() => parseForm(body), body).toThrow(FormTextError);
    }
  });
});
