// The controller's connection to the apiserver (controller/runtime/k8s.ts) takes every URL client-node's typed
// APIs make for the server a kubeconfig names: send() refuses a request to any other server.
import { HttpMethod, KubeConfig, ServerConfiguration } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiConnection } from '../../../../controller/runtime/k8s.ts';

function connectionTo(server: string): ApiConnection {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: false }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new ApiConnection(kc);
}

describe('ApiConnection.server', () => {
  it.each([
    // what loadFromCluster() makes of KUBERNETES_SERVICE_HOST and _PORT in every pod
    ['an in-cluster configuration (the default port named)', 'https://10.96.0.1:443', 'https://10.96.0.1'],
    ['a port of its own', 'https://127.0.0.1:6443', 'https://127.0.0.1:6443'],
    ['a path prefix behind a proxy, with a trailing slash', 'https://proxy.example:8443/k8s/', 'https://proxy.example:8443/k8s'],
    ['an IPv6 address', 'https://[fd00::1]:443', 'https://[fd00::1]'],
  ])('is the prefix of the URLs the typed APIs make for %s', (_what, server, expected) => {
    const connection = connectionTo(server);
    expect(connection.server).toBe(expected);
    const url = new ServerConfiguration(connection.server, {}).makeRequestContext('/api/v1/namespaces', HttpMethod.GET).getUrl();
    expect(url.startsWith(`${connection.server}/`), url).toBe(true);
    expect(url.slice(connection.server.length)).toBe('/api/v1/namespaces');
  });
});
