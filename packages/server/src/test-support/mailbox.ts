import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One e-mail as the server received it: the recipients and the decoded message text. */
export interface ReceivedMail {
  to: string;
  body: string;
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives, for tests. */
export interface Mailbox {
  /** What `VEXIL_SMTP_URL` is set to. */
  url: string;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/** Starts a {@link Mailbox} on a free port. */
export async function startMailbox(): Promise<Mailbox> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address).join(','),
          // The text part is quoted-printable: undo soft line breaks and escapes.
          body: Buffer.concat(chunks)
            .toString('utf8')
            .replace(/=\r\n/g, '')
            .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
